// Lint rules: typescript-eslint's recommended set, type imports kept apart, the
// core kept free of koa (only src/http may import it), and the dashboard's page
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
    files: ['src/pool/**', 'src/auth/**', 'src/quota/**', 'src/config/**', 'src/devnet/**', 'src/accounts/**', 'plugins/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: ['koa', '@koa/router'], patterns: ['../http/*'] }],
    },
  },
  {
    // Served to browsers as they are (no build step): browser globals only, no Node.
    files: ['src/http/dashboard/assets/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        location: 'readonly',
        history: 'readonly',
        fetch: 'readonly',
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
