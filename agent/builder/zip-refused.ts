/** A zip we will not unpack; its message is written to the build log as is, so it speaks only of the zip. */
export class ZipRefusedError extends Error {}
