// Cross-field rules over the parsed stack config. Each rule records problems; none throws, so one run
// reports everything that is wrong.
import { canonicalIp, inSubnet, ipFamily, parseCidr } from "../net";
import {
  compareMinor,
  minorOf,
  parseVersion,
  supportsKubernetes,
  talosRelease,
  TALOS_RELEASES,
} from "../talos/versions";
import { INFRA_RULES } from "./infraRules";
import { KeyPath, Problems } from "./problems";
import type {
  RawCluster,
  RawDns,
  RawFlux,
  RawNode,
  RawOci,
  RawOpenbao,
  RawOpenstack,
  RawProxmox,
} from "./schema";

/** A node that passed the schema, with its index in the stack file's list. */
export interface IndexedNode {
  readonly index: number;
  readonly node: RawNode;
}

/** What the rules look at: whatever parsed, plus the raw node list for counts. */
export interface RuleInput {
  readonly cluster?: RawCluster;
  readonly proxmox?: RawProxmox;
  readonly oci?: RawOci;
  readonly openstack?: RawOpenstack;
  /** Platform settings keys present in the stack file (parsed or not). */
  readonly platformsGiven: ReadonlySet<string>;
  readonly openbao?: RawOpenbao;
  readonly dns?: RawDns;
  readonly flux?: RawFlux;
  /** Service keys present in the stack file (parsed or not): gcp, openbao, dns, flux. */
  readonly servicesGiven: ReadonlySet<string>;
  /** Secret config keys set on the stack (values never read here). */
  readonly secretKeys: ReadonlySet<string>;
  /** Every key set in the namespace, secret or not. */
  readonly presentKeys: ReadonlySet<string>;
  readonly nodes: readonly IndexedNode[];
  readonly rawNodes: readonly unknown[];
  /** The values as read, for checks that look past a section that did not parse. */
  readonly raw: Readonly<Record<string, unknown>>;
}

/** A cross-field rule: records problems, never throws. */
export type Rule = (input: RuleInput, problems: Problems) => void;

/** The static network block, on the platforms that have one. */
function networkOf(node: RawNode) {
  return node.platform === "proxmox" || node.platform === "baremetal" ? node.network : undefined;
}

const releasesKnown = `${TALOS_RELEASES[0].minor} to ${TALOS_RELEASES[TALOS_RELEASES.length - 1].minor}`;

const versions: Rule = ({ cluster }, problems) => {
  if (!cluster) return;
  const talos = parseVersion(cluster.talosVersion)!;
  const release = talosRelease(talos);
  if (!release) {
    problems.add(["cluster", "talosVersion"], `unknown Talos release line ${minorOf(talos)}`, {
      got: cluster.talosVersion,
      hint: `This program knows Talos ${releasesKnown}`,
    });
    return;
  }
  const kubernetes = parseVersion(cluster.kubernetesVersion)!;
  if (!supportsKubernetes(release, kubernetes)) {
    problems.add(
      ["cluster", "kubernetesVersion"],
      `Talos ${release.minor} does not support Kubernetes ${minorOf(kubernetes)}`,
      {
        got: cluster.kubernetesVersion,
        hint: `Use Kubernetes ${release.kubernetes.min} to ${release.kubernetes.max}, or another Talos version`,
      },
    );
  }
  if (cluster.configContract) {
    const contract = parseVersion(cluster.configContract)!;
    if (compareMinor(minorOf(contract), release.minor) > 0) {
      problems.add(["cluster", "configContract"], "is newer than cluster.talosVersion", {
        got: cluster.configContract,
        hint: `Use ${release.minor} or older`,
      });
    }
  }
};

const endpoint: Rule = ({ cluster }, problems) => {
  if (cluster && cluster.endpoint === undefined && cluster.vip === undefined) {
    problems.add(["cluster", "endpoint"], "required unless cluster.vip is set", {
      hint: "Give the Kubernetes API's DNS name or IP (e.g. api.staging.example.net), or a vip",
    });
  }
};

const imageFactory: Rule = ({ cluster }, problems) => {
  const factory = cluster?.imageFactory;
  if (!factory?.schematicId) return;
  const customised =
    (factory.extensions?.length ?? 0) +
    (factory.extraKernelArgs?.length ?? 0) +
    Object.values(factory.platformExtensions ?? {}).reduce((n, list) => n + (list?.length ?? 0), 0);
  if (customised > 0) {
    problems.add(
      ["cluster", "imageFactory", "schematicId"],
      "cannot be combined with extensions or extraKernelArgs",
      {
        hint: "Either name a schematic, or list extensions and let the program register the schematic",
      },
    );
  }
};

const controlPlaneCount: Rule = ({ rawNodes }, problems) => {
  if (rawNodes.length === 0) {
    problems.add(["nodes"], "the cluster has no nodes", {
      hint: "List 1, 3 or 5 control planes and any workers",
    });
    return;
  }
  const roles = rawNodes.map((n) => (n as { role?: unknown } | null)?.role);
  // A node with a broken role is reported on its own; counting around it would only add noise.
  if (roles.some((role) => role !== "controlplane" && role !== "worker")) return;
  const controlPlanes = roles.filter((role) => role === "controlplane").length;
  if (controlPlanes === 0) {
    problems.add(["nodes"], "a cluster needs at least one control plane", {
      got: 0,
      hint: "Use 1, 3 or 5",
    });
  } else if (controlPlanes % 2 === 0) {
    problems.add(["nodes"], "etcd needs an odd number of control planes", {
      got: controlPlanes,
      hint: "Use 1, 3 or 5",
    });
  }
};

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

const VIP_OWNER = -1;

const uniqueness: Rule = ({ cluster, nodes }, problems) => {
  const names = new FirstSeen("name", "Node names must be unique");
  const ips = new FirstSeen("address", "Each address belongs to one node");
  const vmIds = new FirstSeen("VM ID", "Choose an unused VM ID");
  const macs = new FirstSeen("MAC", "Each NIC needs its own MAC");
  if (cluster?.vip)
    ips.check(canonicalIp(cluster.vip), VIP_OWNER, ["cluster", "vip"], "cluster.vip", problems);
  for (const { index, node } of nodes) {
    const owner = `nodes[${index}]`;
    names.check(node.name, index, ["nodes", index, "name"], owner, problems);
    networkOf(node)?.addresses.forEach((address, i) => {
      const path = ["nodes", index, "network", "addresses", i];
      ips.check(
        canonicalIp(parseCidr(address)!.ip),
        index,
        path,
        `${owner}.network.addresses[${i}]`,
        problems,
      );
    });
    if (node.platform === "baremetal") {
      const path = ["nodes", index, "baremetal", "address"];
      ips.check(
        canonicalIp(node.baremetal.address),
        index,
        path,
        `${owner}.baremetal.address`,
        problems,
      );
    }
    const mac = networkOf(node)?.mac;
    if (mac)
      macs.check(mac.toLowerCase(), index, ["nodes", index, "network", "mac"], owner, problems);
    if (node.platform === "oci" && node.oci?.privateIp) {
      const path = ["nodes", index, "oci", "privateIp"];
      ips.check(node.oci.privateIp, index, path, `${owner}.oci.privateIp`, problems);
    }
    if (node.platform === "openstack") {
      for (const key of ["fixedIp", "fixedIp6"] as const) {
        const address = node.openstack?.[key];
        const path = ["nodes", index, "openstack", key];
        if (address)
          ips.check(canonicalIp(address), index, path, `${owner}.openstack.${key}`, problems);
      }
      const portMac = node.openstack?.mac;
      const path = ["nodes", index, "openstack", "mac"];
      if (portMac) macs.check(portMac.toLowerCase(), index, path, owner, problems);
    }
    if (node.platform === "proxmox")
      vmIds.check(
        String(node.proxmox.vmId),
        index,
        ["nodes", index, "proxmox", "vmId"],
        owner,
        problems,
      );
  }
};

/** Each platform's settings key, named in the problem when a node needs it. */
const PLATFORM_SETTINGS: Record<string, { name: string; hint: string }> = {
  proxmox: { name: "Proxmox", hint: "Add proxmox.endpoint and proxmox.hosts" },
  oci: { name: "OCI", hint: "Add oci.region, oci.compartmentId, oci.subnetId and oci.image" },
  openstack: { name: "OpenStack", hint: "Add openstack.networkId and openstack.flavor" },
};

const platformSettings: Rule = ({ platformsGiven, nodes }, problems) => {
  for (const [platform, { name, hint }] of Object.entries(PLATFORM_SETTINGS)) {
    const first = nodes.find(({ node }) => node.platform === platform);
    if (first && !platformsGiven.has(platform)) {
      problems.add([platform], `required because nodes[${first.index}] runs on ${name}`, { hint });
    }
  }
};

const proxmoxHosts: Rule = ({ proxmox, nodes }, problems) => {
  const proxmoxNodes = nodes.filter(({ node }) => node.platform === "proxmox");
  if (!proxmox) return;
  const declared = new Set<string>();
  proxmox.hosts.forEach((host, i) => {
    if (declared.has(host.name))
      problems.add(["proxmox", "hosts", i, "name"], `host ${host.name} is listed twice`);
    declared.add(host.name);
  });
  for (const { index, node } of proxmoxNodes) {
    if (node.platform === "proxmox" && !declared.has(node.proxmox.host)) {
      problems.add(["nodes", index, "proxmox", "host"], "is not declared in proxmox.hosts", {
        got: node.proxmox.host,
        hint: `Declared: ${[...declared].join(", ")}`,
      });
    }
  }
};

/** True for an IPv6 link-local address (fe80::/10). */
export function isLinkLocal6(ip: string): boolean {
  return ipFamily(ip) === 6 && inSubnet(ip, { ip: "fe80::", prefix: 10, family: 6 });
}

const nodeNetworks: Rule = ({ nodes }, problems) => {
  for (const { index, node } of nodes) {
    const base = ["nodes", index] as const;
    const network = networkOf(node);
    if (node.platform !== "proxmox" && node.platform !== "baremetal") continue;
    if (!network) {
      if (node.platform === "proxmox") {
        problems.add([...base, "network"], "required for Proxmox nodes", {
          hint: "Give network.addresses (the VM's static address, e.g. 192.0.2.11/24) and network.gateway",
        });
      }
      continue;
    }
    if (node.platform === "baremetal" && !network.mac && !network.interface) {
      problems.add([...base, "network"], "name the link to configure with mac or interface", {
        hint: "mac selects the NIC by hardware address; interface takes a name such as enp1s0",
      });
    }
    const cidrs = network.addresses.map((a) => parseCidr(a)!);
    for (const [key, family] of [
      ["gateway", 4],
      ["gateway6", 6],
    ] as const) {
      const gateway = network[key];
      // An IPv6 router is commonly reached at its link-local address (fe80::/10), on any subnet.
      if (family === 6 && gateway && isLinkLocal6(gateway)) continue;
      if (gateway && !cidrs.some((c) => c.family === family && inSubnet(gateway, c))) {
        problems.add(
          [...base, "network", key],
          `is outside every IPv${family} subnet of the node`,
          {
            got: gateway,
            hint: `The node's addresses are ${network.addresses.join(", ")}`,
          },
        );
      }
    }
    if (node.platform === "baremetal") {
      const address = canonicalIp(node.baremetal.address);
      if (!cidrs.some((c) => canonicalIp(c.ip) === address)) {
        problems.add(
          [...base, "baremetal", "address"],
          "is not one of network.addresses, so the node would stop answering there once configured",
          {
            got: node.baremetal.address,
            hint: "List it in network.addresses, or use the static address the node will keep",
          },
        );
      }
    }
  }
};

const controlPlaneMemory: Rule = ({ nodes }, problems) => {
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

const vip: Rule = ({ cluster, nodes, openstack }, problems) => {
  const address = cluster?.vip;
  if (!address) return;
  const outside: string[] = [];
  for (const { index, node } of nodes) {
    if (node.role !== "controlplane") continue;
    if (node.platform === "oci") {
      problems.add(
        ["cluster", "vip"],
        `cannot float between OCI instances such as nodes[${index}]`,
        {
          hint: "OCI networks do not carry layer-2 VIPs: use cluster.endpoint with a DNS name or a network load balancer",
        },
      );
      continue;
    }
    if (node.platform === "openstack") {
      // The VIP becomes a port of its own, allowed on each control plane's port.
      if (openstack && !openstack.subnetId) {
        problems.add(
          ["openstack", "subnetId"],
          `required for the VIP port, because control plane nodes[${index}] runs on OpenStack and cluster.vip is set`,
        );
      }
      continue;
    }
    const network = networkOf(node);
    if (!network) {
      // A Proxmox node without a network is reported by itself already.
      if (node.platform !== "proxmox") {
        problems.add(
          ["nodes", index, "network"],
          "required on control planes when cluster.vip is set (the VIP needs a link)",
        );
      }
    } else if (!network.addresses.some((a) => inSubnet(address, parseCidr(a)!))) {
      outside.push(`nodes[${index}] has ${network.addresses.join(", ")}`);
    }
  }
  if (outside.length > 0) {
    problems.add(["cluster", "vip"], "is not in the subnet of every control plane", {
      got: address,
      hint: `A layer-2 VIP must share a subnet with every control plane; ${outside.join("; ")}`,
    });
  }
};

/** `example.net.` for `example.net` or `example.net.` */
export function fqdn(name: string): string {
  return name.endsWith(".") ? name : `${name}.`;
}

const inZone = (name: string, domain: string) => {
  const [n, d] = [fqdn(name).toLowerCase(), fqdn(domain).toLowerCase()];
  return n === d || n.endsWith(`.${d}`);
};

const services: Rule = (
  { servicesGiven, cluster, dns, flux, secretKeys, presentKeys },
  problems,
) => {
  for (const key of ["openbao", "dns"]) {
    if (servicesGiven.has(key) && !servicesGiven.has("gcp")) {
      problems.add([key], "needs talos-platform:gcp", { hint: "Add gcp.project and gcp.region" });
    }
  }
  if (
    dns &&
    cluster?.endpoint &&
    !/^[\d.:]+$/.test(cluster.endpoint) &&
    !inZone(cluster.endpoint, dns.domain)
  ) {
    problems.add(
      ["cluster", "endpoint"],
      `is not in dns.domain ${fqdn(dns.domain)}, so its record cannot be created there`,
      {
        got: cluster.endpoint,
        hint: "Use a name in the zone, or leave talos-platform:dns out and manage the record elsewhere",
      },
    );
  }
  dns?.records?.forEach((record, i) => {
    if (!inZone(record.name, dns.domain)) {
      problems.add(["dns", "records", i, "name"], `is not in dns.domain ${fqdn(dns.domain)}`, {
        got: record.name,
      });
    }
    const family =
      record.type === "AAAA" ? 6 : record.type === "A" || record.type === undefined ? 4 : undefined;
    record.values.forEach((value, j) => {
      if (family !== undefined && ipFamily(value) !== family) {
        problems.add(["dns", "records", i, "values", j], `is not an IPv${family} address`, {
          got: value,
        });
      }
    });
  });
  if (flux && flux.repository.startsWith("ssh://")) {
    if (!flux.knownHosts) {
      problems.add(["flux", "knownHosts"], "required for an ssh:// repository", {
        hint: "Give the Git server's known_hosts line, e.g. from `ssh-keyscan github.com`",
      });
    }
    // Present in plain text is reported as such, once.
    if (!secretKeys.has("fluxDeployKey") && !presentKeys.has("fluxDeployKey")) {
      problems.add(["fluxDeployKey"], "required for an ssh:// repository, as a secret", {
        hint: "Run `pulumi config set --secret fluxDeployKey < deploy_key` (the key file on standard input, not on the command line), or let the CLI resolve it (docs/credentials.md)",
      });
    }
  }
};

/** Every cross-field rule, in the order their problems are listed. */
export const RULES: readonly Rule[] = [
  versions,
  endpoint,
  imageFactory,
  controlPlaneCount,
  uniqueness,
  platformSettings,
  proxmoxHosts,
  nodeNetworks,
  controlPlaneMemory,
  vip,
  services,
  ...INFRA_RULES,
];
