// Stack configs of any size for the benchmark: 3 control planes, the rest workers, four in five on
// Proxmox (spread over 8 hosts) and one in five on bare metal. Addresses from 198.18.0.0/15 (RFC 2544).

/** A valid stack config with `size` nodes. */
export function generateStack(size: number): Record<string, unknown> {
  const hosts = Array.from({ length: 8 }, (_, i) => `pve${i + 1}`);
  const address = (i: number) =>
    `198.${18 + Math.floor((i + 10) / 65536)}.${Math.floor((i + 10) / 256) % 256}.${(i + 10) % 256}`;
  const nodes = Array.from({ length: size }, (_, i) => {
    const role = i < 3 ? "controlplane" : "worker";
    const common = {
      name: `node-${i}`,
      role,
      network: {
        addresses: [`${address(i)}/15`],
        gateway: "198.18.0.1",
        ...(i % 5 === 4 ? { interface: "enp1s0" } : {}),
      },
    };
    return i % 5 === 4 && role === "worker"
      ? { ...common, platform: "baremetal", baremetal: { address: address(i) } }
      : {
          ...common,
          platform: "proxmox",
          proxmox: { host: hosts[i % hosts.length], vmId: 1000 + i },
        };
  });
  return {
    cluster: {
      name: "bench",
      endpoint: "api.bench.example.net",
      vip: "198.18.0.5",
      talosVersion: "v1.13.9",
      kubernetesVersion: "1.36.3",
      imageFactory: { platformExtensions: { proxmox: ["siderolabs/qemu-guest-agent"] } },
      // Proxmox and bare metal are two sites; their addresses reach each other.
      network: { connectivity: "routed" },
    },
    proxmox: { endpoint: "https://pve1.example.net:8006/", hosts: hosts.map((name) => ({ name })) },
    nodes,
  };
}
