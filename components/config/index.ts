export * from "./load";
export * from "./problems";
export * from "./schema";
export * from "./types";
export * from "./validate";
export * from "./bootstrap";
export * from "./app";
