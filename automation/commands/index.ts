export * from "./operation";
export * from "./outputs";
export * from "./stacks";
