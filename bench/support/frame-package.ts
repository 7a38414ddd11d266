/** Where a profile frame's code lives, shared by the CPU and heap profile summaries. */

/** `node_modules/<pkg>` (scoped packages included), our own `src/…`, `bench/…`, `temporal/…` file, a `node:` module, or `(native/vm)`. */
export function packageOf(url: string): string {
  if (!url) return '(native/vm)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const src = url.search(/\/(src|bench|temporal)\//);
  return src >= 0 ? url.slice(src + 1) : url;
}
