// Each node on its own and among the others: a unique name, addresses, VM ID and MACs; its platform's
// settings present; a Proxmox host that is declared; enough memory for a control plane; somewhere for
// workloads to run.
import { canonicalIp } from "../../net";
import { claimedAddresses, staticNetwork } from "../derived";
import type { KeyPath, Problems } from "../problems";
import type { Rule } from "./rule";

/** Records `path` as a duplicate of the first place the same value was seen under another owner. */
class FirstSeen {
  private readonly seen = new Map<string, { owner: number; key: string }>();
  constructor(
    private readonly what: string,
    private readonly fix: string,
  ) {}

  check(value: string, owner: number, path: KeyPath, ownerKey: string, problems: Problems): void {
    const first = this.seen.get(value);
    if (!first) {
      this.seen.set(value, { owner, key: ownerKey });
    } else if (first.owner !== owner) {
      problems.add(path, `${this.what} ${value} is already used by ${first.key}`, {
        hint: this.fix,
      });
    }
  }
}

/** Each name, address, VM ID and MAC belongs to one node (the VIP's address: vip.ts). */
export const uniqueness: Rule = ({ nodes }, problems) => {
  const names = new FirstSeen("name", "Node names must be unique");
  const ips = new FirstSeen("address", "Each address belongs to one node");
  const vmIds = new FirstSeen("VM ID", "Choose an unused VM ID");
  const macs = new FirstSeen("MAC", "Each NIC needs its own MAC");
  for (const entry of nodes) {
    const { index, node } = entry;
    const owner = `nodes[${index}]`;
    names.check(node.name, index, ["nodes", index, "name"], owner, problems);
    for (const { ip, path, key } of claimedAddresses(entry)) {
      ips.check(canonicalIp(ip), index, path, key, problems);
    }
    const nicMacs: [string | undefined, KeyPath][] = [
      [staticNetwork(node)?.mac, ["nodes", index, "network", "mac"]],
      [
        node.platform === "openstack" ? node.openstack?.mac : undefined,
        ["nodes", index, "openstack", "mac"],
      ],
    ];
    for (const [mac, path] of nicMacs) {
      if (mac) macs.check(mac.toLowerCase(), index, path, owner, problems);
    }
    if (node.platform === "proxmox") {
      const path = ["nodes", index, "proxmox", "vmId"];
      vmIds.check(String(node.proxmox.vmId), index, path, owner, problems);
    }
  }
};

/**
 * A bare-metal node's maintenance address (where it answers before its first config) is no other
 * node's address nor another node's maintenance address: the first push would configure the wrong
 * machine.
 */
export const maintenanceAddresses: Rule = ({ nodes }, problems) => {
  const owners = new Map<string, { owner: number; key: string }>();
  for (const entry of nodes) {
    for (const { ip, key } of claimedAddresses(entry)) {
      const address = canonicalIp(ip);
      if (!owners.has(address)) owners.set(address, { owner: entry.index, key });
    }
  }
  const maintenance = new Map<string, { owner: number; key: string }>();
  for (const { index, node } of nodes) {
    if (node.platform !== "baremetal" || !node.baremetal.maintenanceAddress) continue;
    const address = canonicalIp(node.baremetal.maintenanceAddress);
    const key = `nodes[${index}].baremetal.maintenanceAddress`;
    const claimed = owners.get(address);
    const other = claimed && claimed.owner !== index ? claimed : maintenance.get(address);
    if (other && other.owner !== index) {
      problems.add(
        ["nodes", index, "baremetal", "maintenanceAddress"],
        `address ${address} is already used by ${other.key}, so the first push would configure that machine`,
        {
          got: node.baremetal.maintenanceAddress,
          hint: "Give the address this machine answers on in maintenance mode (its DHCP or SLAAC address)",
        },
      );
    }
    if (!maintenance.has(address)) maintenance.set(address, { owner: index, key });
  }
};

/** Each platform's settings key, named in the problem when a node needs it. */
const PLATFORM_SETTINGS: Record<string, { name: string; hint: string }> = {
  proxmox: { name: "Proxmox", hint: "Add proxmox.endpoint and proxmox.hosts" },
  oci: { name: "OCI", hint: "Add oci.region, oci.compartmentId, oci.subnetId and oci.image" },
  openstack: { name: "OpenStack", hint: "Add openstack.networkId and openstack.flavor" },
};

/** A platform's settings are given when a node runs on it. */
export const platformSettings: Rule = ({ platformsGiven, nodes }, problems) => {
  for (const [platform, { name, hint }] of Object.entries(PLATFORM_SETTINGS)) {
    const first = nodes.find(({ node }) => node.platform === platform);
    if (first && !platformsGiven.has(platform)) {
      problems.add([platform], `required because nodes[${first.index}] runs on ${name}`, { hint });
    }
  }
};

/** An OpenStack fixed address is allocated on a subnet the stack names (the port's fixed_ip). */
export const openstackSubnets: Rule = ({ openstack, nodes }, problems) => {
  if (!openstack) return;
  const keys = [
    ["fixedIp", "subnetId", "IPv4"],
    ["fixedIp6", "subnet6Id", "IPv6"],
  ] as const;
  for (const [fixed, subnet, family] of keys) {
    if (openstack[subnet]) continue;
    const first = nodes.find(
      ({ node }) => node.platform === "openstack" && node.openstack?.[fixed] !== undefined,
    );
    if (first) {
      problems.add(
        ["openstack", subnet],
        `required because nodes[${first.index}] sets openstack.${fixed}, and a fixed address is allocated on a named subnet`,
        {
          hint: `Give the ID of the network's ${family} subnet, or leave openstack.${fixed} out (DHCP)`,
        },
      );
    }
  }
};

/** Proxmox hosts are declared once, and every Proxmox node's host is declared. */
export const proxmoxHosts: Rule = ({ proxmox, nodes }, problems) => {
  if (!proxmox) return;
  const declared = new Set<string>();
  proxmox.hosts.forEach((host, i) => {
    if (declared.has(host.name))
      problems.add(["proxmox", "hosts", i, "name"], `host ${host.name} is listed twice`);
    declared.add(host.name);
  });
  for (const { index, node } of nodes) {
    if (node.platform === "proxmox" && !declared.has(node.proxmox.host)) {
      problems.add(["nodes", index, "proxmox", "host"], "is not declared in proxmox.hosts", {
        got: node.proxmox.host,
        hint: `Declared: ${[...declared].join(", ")}`,
      });
    }
  }
};

/** A Proxmox control plane has the memory etcd and the API server need. */
export const controlPlaneMemory: Rule = ({ nodes }, problems) => {
  for (const { index, node } of nodes) {
    if (
      node.platform === "proxmox" &&
      node.role === "controlplane" &&
      (node.proxmox.memory ?? 4096) < 2048
    ) {
      problems.add(
        ["nodes", index, "proxmox", "memory"],
        "a control plane needs at least 2048 MiB",
        { got: node.proxmox.memory },
      );
    }
  }
};

/** Somewhere to run workloads: workers, or control planes that take them. */
export const workloadPlacement: Rule = ({ cluster, rawNodes }, problems) => {
  if (cluster?.allowSchedulingOnControlPlanes !== false || rawNodes.length === 0) return;
  const roles = rawNodes.map((n) => (n as { role?: unknown } | null)?.role);
  // A worker, or a misspelt role that may be a worker's (it is reported on its own).
  if (roles.some((role) => role !== "controlplane")) return;
  problems.add(
    ["cluster", "allowSchedulingOnControlPlanes"],
    "is false, but the cluster has no workers, so no workload could run anywhere",
    {
      got: false,
      hint: "Add workers, or leave the key out (without workers it defaults to true)",
    },
  );
};
