export * from "./cluster";
export * from "./credentials";
export * from "./imageFactory";
export * from "./patches";
export * from "./versions";
