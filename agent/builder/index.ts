export { buildFunction, DEFAULT_BUILD_LIMITS, type BuildLimits, type BuildRequest, type BuildResult } from "./build-function.js";
export { unpackArtifact, packArtifact } from "./artifact.js";
export { unzipSafely, ZipRefusedError, DEFAULT_UNZIP_LIMITS, type UnzipLimits } from "./unzip.js";
