export * from "./baremetal/node";
export * from "./factory";
export * from "./machine";
export * from "./proxmox/node";
export * from "./proxmox/platform";
