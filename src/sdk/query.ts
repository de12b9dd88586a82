// Reading a request's query as the node will: names and values percent-decoded, `+`
// as a space, pairs split on `&` and on `;` (which older Go servers also split on),
// so the value a plugin routes by is the one the node reads, however it was encoded.

/** Every value of the parameter `name` in a raw query string (without '?'). */
export function queryValues(query: string, name: string): string[] {
  if (query === '') return [];
  return new URLSearchParams(query.includes(';') ? query.replaceAll(';', '&') : query).getAll(name);
}
