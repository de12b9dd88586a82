// Lint rules: typescript-eslint's recommended set, type imports kept apart, the
// core kept free of koa (only src/admin may import it) and of the listeners, and the dashboard's page
// scripts linted as browser modules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'bench/results/', 'test-output/', 'test-output-*/', 'data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Type-aware rules: a promise nobody awaits or voids, a switch over a union that
    // misses a member, a cast that changes nothing.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
    },
  },
  {
    files: ['src/pool/**', 'src/auth/**', 'src/quota/**', 'src/config/**', 'src/devnet/**', 'src/accounts/**', 'src/record/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: ['koa', '@koa/router'], patterns: ['**/admin/**', '**/transports/**'] }],
    },
  },
  {
    // A plugin is written against the public SDK only, as a third-party one is.
    files: ['plugins/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['koa', '@koa/router', 'noderouter'],
          patterns: [
            { group: ['**/src/**', '**/src'], message: 'plugins import the core only as noderouter/plugin or noderouter/devnet' },
            {
              group: ['noderouter/*', '!noderouter/plugin', '!noderouter/devnet'],
              message: 'only noderouter/plugin and noderouter/devnet are public',
            },
          ],
        },
      ],
    },
  },
  {
    // Served to browsers as they are (no build step): browser globals only, no Node.
    files: ['src/admin/dashboard/assets/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        location: 'readonly',
        history: 'readonly',
        fetch: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
        Event: 'readonly',
        process: 'off',
        Buffer: 'off',
      },
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
