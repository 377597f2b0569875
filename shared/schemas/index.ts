export * from "./common.js";
export * from "./function.js";
export * from "./tag.js";
export * from "./trigger.js";
export * from "./endpoint.js";
export * from "./build.js";
export * from "./task.js";
export * from "./admin.js";
