export * from "./clusterDns";
export * from "./openbaoUnseal";
export * from "./stateBucket";
