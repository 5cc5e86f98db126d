/**
 * Whether a process of this host still exists: signal 0 reaches it, or is
 * refused because another user runs it (EPERM). How every owner of a file or
 * a lease (a broker's, a Coordinator's) tells a dead holder from a live one.
 */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, run by another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
