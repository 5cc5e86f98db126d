/** A Redis URL as it may appear in a message or a log line: scheme, host and database, never credentials. */
export function safeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(unparsable url)';
  }
}
