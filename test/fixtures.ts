// Valid stack configs to start from; each test changes one thing.
import type { StackValues } from "./harness";

/** Three Proxmox control planes on three hosts behind a VIP (like staging). */
export function proxmoxCluster(): StackValues {
  return {
    cluster: {
      name: "demo",
      endpoint: "api.demo.example.net",
      vip: "192.0.2.10",
      talosVersion: "v1.13.9",
      kubernetesVersion: "1.36.3",
      imageFactory: { platformExtensions: { proxmox: ["siderolabs/qemu-guest-agent"] } },
      network: { nameservers: ["192.0.2.1"] },
    },
    proxmox: {
      endpoint: "https://pve1.example.net:8006/",
      hosts: [{ name: "pve1" }, { name: "pve2" }, { name: "pve3" }],
    },
    nodes: [1, 2, 3].map((i) => ({
      name: `cp-${i}`,
      role: "controlplane",
      platform: "proxmox",
      network: { addresses: [`192.0.2.1${i}/24`], gateway: "192.0.2.1" },
      proxmox: { host: `pve${i}`, vmId: 100 + i, vlan: 20 },
    })),
  };
}

/** The Proxmox cluster plus one Proxmox worker and one bare-metal worker reached over IPv6. */
export function mixedCluster(): StackValues {
  const values = proxmoxCluster();
  (values.nodes as unknown[]).push(
    {
      name: "worker-1",
      role: "worker",
      platform: "proxmox",
      network: { addresses: ["192.0.2.21/24"], gateway: "192.0.2.1", mac: "BC:24:11:00:00:21" },
      proxmox: { host: "pve1", vmId: 121, cores: 4, memory: 8192, diskSize: 64 },
    },
    {
      name: "metal-1",
      role: "worker",
      platform: "baremetal",
      installDisk: "/dev/nvme0n1",
      network: { addresses: ["2001:db8::31/64"], gateway6: "2001:db8::1", interface: "enp1s0" },
      baremetal: { address: "2001:db8::31" },
    },
  );
  return values;
}

/** A deep copy, so a test can change it freely. */
export function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
