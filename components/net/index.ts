export * from "./addresses";
export * from "./mac";
