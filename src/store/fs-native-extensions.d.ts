// The part of fs-native-extensions (which ships no types) that the store lock uses.
declare module 'fs-native-extensions' {
  /**
   * Asks the kernel for a lock on the whole file (an open-file-description lock on Linux, flock on macOS,
   * LockFileEx on Windows) without waiting: true if granted, false if another descriptor holds it.
   * An exclusive lock needs a descriptor opened for writing.
   */
  export function tryLock(fd: number, options?: { shared?: boolean }): boolean;
  export function unlock(fd: number): void;
  const nativeFs: { tryLock: typeof tryLock; unlock: typeof unlock };
  export default nativeFs;
}
