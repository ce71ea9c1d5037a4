// Cross-field rules of the real infrastructure: sites and how they reach each other, the node
// addresses kubelets report, reboots `up` may cause, the Proxmox image path, architecture-specific
// extensions and the OpenBao unseal identity. Each records problems; none throws.
import { ipFamily } from "../net";
import type { Problems } from "./problems";
import type { IndexedNode, Rule, RuleInput } from "./rules";
import { knownSourceAddresses, serviceFamilies, siteOf, staticAddresses } from "./sites";

/** Extensions built for x86 only: an arm64 schematic cannot carry them. */
export const X86_ONLY_EXTENSIONS: readonly string[] = [
  "siderolabs/intel-ucode",
  "siderolabs/amd-ucode",
];

/** Proxmox image formats that Proxmox decompresses into `iso` content, which only SSH can import. */
const SSH_IMAGE_FORMATS: readonly string[] = ["raw.zst", "raw.gz"];

const ipv = (family: number) => `IPv${family}`;

/** Each node with its site. */
function sitesOf({ nodes, oci, openstack }: RuleInput): { entry: IndexedNode; site: string }[] {
  return nodes.map((entry) => ({ entry, site: siteOf(entry.node, oci, openstack) }));
}

const connectivity: Rule = (input, problems) => {
  const { cluster } = input;
  if (!cluster) return;
  const placed = sitesOf(input);
  const sites = [...new Set(placed.map((p) => p.site))];
  if (sites.length > 1 && !cluster.network?.connectivity) {
    problems.add(
      ["cluster", "network", "connectivity"],
      `required because the nodes are at ${sites.length} sites (${sites.join(", ")})`,
      {
        hint: "Use kubespan (a WireGuard mesh between the nodes, UDP 51820) or routed (node addresses reach each other, e.g. over public IPv6); see docs/platforms.md, Sites",
      },
    );
  }
  for (const name of Object.keys(cluster.sites ?? {})) {
    if (!sites.includes(name)) {
      problems.add(["cluster", "sites", name], "no node is at this site", {
        hint: `Sites with nodes: ${sites.join(", ")} (a node's site is nodes[].site, else its platform and region)`,
      });
    }
  }
  const controlPlaneSites = [
    ...new Set(placed.filter((p) => p.entry.node.role === "controlplane").map((p) => p.site)),
  ];
  // An OCI control plane with a VIP is reported by the vip rule already (OCI carries no layer-2 VIP).
  const ociControlPlane = placed.some(
    (p) => p.entry.node.role === "controlplane" && p.entry.node.platform === "oci",
  );
  if (cluster.vip && controlPlaneSites.length > 1 && !ociControlPlane) {
    problems.add(
      ["cluster", "vip"],
      `a layer-2 VIP cannot span sites, and the control planes are at ${controlPlaneSites.join(", ")}`,
      {
        got: cluster.vip,
        hint: "Drop cluster.vip and give cluster.endpoint a DNS name (talos-platform:dns can point it at the control planes) or a load balancer you run",
      },
    );
  }
};

/**
 * With `routed` sites, the OpenStack security group lets other sites' nodes in by their prefixes, so
 * every other site's must be known; and a control plane must be able to reach every node at the
 * address its kubelet reports (the health check talks to each node there).
 */
const routedSites: Rule = (input, problems) => {
  const { cluster, oci } = input;
  if (cluster?.network?.connectivity !== "routed") return;
  const placed = sitesOf(input);
  const sites = [...new Set(placed.map((p) => p.site))];
  if (sites.length < 2) return;
  const openstackSites = new Set(
    placed.filter((p) => p.entry.node.platform === "openstack").map((p) => p.site),
  );
  if (openstackSites.size > 0) {
    for (const site of sites) {
      if (openstackSites.has(site) && openstackSites.size === 1) continue;
      if (cluster.sites?.[site]?.cidrs) continue;
      const unknown = placed.find(
        (p) => p.site === site && knownSourceAddresses(p.entry.node, oci) === undefined,
      );
      if (unknown) {
        problems.add(
          ["cluster", "sites", site, "cidrs"],
          `required because nodes[${unknown.entry.index}] connects from an address known only once it exists, and the OpenStack security group must let this site in`,
          { hint: "List the prefixes this site's nodes connect from, e.g. [2001:db8:200::/56]" },
        );
      }
    }
  }
  const controlPlaneSites = new Set(
    placed.filter((p) => p.entry.node.role === "controlplane").map((p) => p.site),
  );
  for (const { entry, site } of placed) {
    const { node, index } = entry;
    if (node.platform !== "oci") continue;
    const publicIp = node.oci?.assignPublicIp ?? oci?.assignPublicIp ?? false;
    const remote = [...controlPlaneSites].some((s) => s !== site);
    if (publicIp && remote && !node.oci?.ipv6Address) {
      problems.add(
        ["nodes", index, "oci", "assignPublicIp"],
        "its kubelet reports the private VNIC address, which control planes at other sites cannot reach (the public IPv4 is NAT, not on the node)",
        {
          got: true,
          hint: "Give it oci.ipv6Address (routed over IPv6), or use cluster.network.connectivity: kubespan",
        },
      );
    }
  }
};

/** Each node needs an address of the primary service family: its kubelet's node IP. */
const kubeletFamily: Rule = ({ cluster, nodes }, problems) => {
  if (!cluster) return;
  const [primary] = serviceFamilies(cluster);
  for (const { index, node } of nodes) {
    const lacks = (addresses: readonly (string | undefined)[]) =>
      !addresses.some((a) => a !== undefined && ipFamily(a) === primary);
    const hint = `The first of cluster.network.serviceSubnets is ${ipv(primary)}: Talos gives each kubelet a node IP of that family, and health checks find nodes by it`;
    switch (node.platform) {
      case "proxmox":
        if (node.network && lacks(staticAddresses(node)))
          problems.add(["nodes", index, "network", "addresses"], `has no ${ipv(primary)} address`, {
            got: node.network.addresses,
            hint,
          });
        break;
      case "baremetal":
        if (node.network && lacks(staticAddresses(node)))
          problems.add(["nodes", index, "network", "addresses"], `has no ${ipv(primary)} address`, {
            got: node.network.addresses,
            hint,
          });
        else if (!node.network && lacks([node.baremetal.address]))
          problems.add(
            ["nodes", index, "baremetal", "address"],
            `is not an ${ipv(primary)} address`,
            {
              got: node.baremetal.address,
              hint: `${hint}. Give network.addresses with one`,
            },
          );
        break;
      case "oci":
        if (primary === 6 && !node.oci?.ipv6Address)
          problems.add(
            ["nodes", index, "oci", "ipv6Address"],
            "required in an IPv6-first cluster",
            {
              hint,
            },
          );
        break;
      case "openstack":
        if (primary === 6 && !node.openstack?.fixedIp6)
          problems.add(
            ["nodes", index, "openstack", "fixedIp6"],
            "required in an IPv6-first cluster",
            {
              hint,
            },
          );
        break;
      default: {
        const unhandled: never = node;
        throw new Error(`no kubelet rule for ${JSON.stringify(unhandled)}`);
      }
    }
  }
};

/**
 * No `up` may reboot more than one control plane, or more workers than the rollout setting allows, at
 * once: `auto` and `reboot` reboot every node whose change needs it, together.
 */
const applyMode: Rule = ({ cluster, rawNodes }, problems) => {
  const mode = cluster?.applyMode;
  if (!mode) return;
  if (mode === "staged") {
    problems.add(
      ["cluster", "applyMode"],
      "staged never takes effect on a new node: Talos keeps a staged config in maintenance mode until a reboot that never comes",
      {
        got: mode,
        hint: "Use staged_if_needing_reboot (the default): new nodes take their config at once, running nodes get a change staged when it needs a reboot",
      },
    );
    return;
  }
  if (mode !== "auto" && mode !== "reboot") return;
  const roles = rawNodes.map((n) => (n as { role?: unknown } | null)?.role);
  const controlPlanes = roles.filter((r) => r === "controlplane").length;
  const workers = roles.filter((r) => r === "worker").length;
  const maxWorkers = cluster.rollout?.maxUnavailableWorkers ?? 1;
  const why = [
    ...(controlPlanes > 1 ? [`${controlPlanes} control planes (etcd loses quorum)`] : []),
    ...(workers > maxWorkers
      ? [`${workers} workers (cluster.rollout.maxUnavailableWorkers is ${maxWorkers})`]
      : []),
  ];
  if (why.length > 0) {
    problems.add(
      ["cluster", "applyMode"],
      `${mode} reboots every node a change needs at the same time: here up to ${why.join(" and ")}`,
      {
        got: mode,
        hint: "Use staged_if_needing_reboot (the default) and reboot staged nodes with `npm run platform -- rollout <env>`, or no_reboot",
      },
    );
  }
};

const proxmoxImage: Rule = ({ proxmox, secretKeys }, problems) => {
  if (!proxmox) return;
  const format = proxmox.imageFormat ?? "qcow2";
  if (SSH_IMAGE_FORMATS.includes(format) && !proxmox.ssh) {
    problems.add(
      ["proxmox", "imageFormat"],
      "is decompressed by Proxmox into an iso-content file, which the provider can only import over SSH",
      {
        got: format,
        hint: "Add proxmox.ssh (username, and agent: true or the proxmoxSshPrivateKey credential), or use qcow2 or raw (Proxmox VE 8.4 or newer, no SSH)",
      },
    );
  }
  if (proxmox.ssh && proxmox.ssh.agent !== true && !secretKeys.has("proxmoxSshPrivateKey")) {
    problems.add(
      ["proxmoxSshPrivateKey"],
      "required as a secret because proxmox.ssh.agent is not true",
      {
        hint: "Let the CLI resolve it (Bitwarden proxmox-ssh-private-key, or PROXMOX_VE_SSH_PRIVATE_KEY), or set proxmox.ssh.agent: true to use SSH_AUTH_SOCK",
      },
    );
  }
  proxmox.hosts.forEach((host, i) => {
    if (host.sshAddress && !proxmox.ssh) {
      problems.add(["proxmox", "hosts", i, "sshAddress"], "is only used with proxmox.ssh", {
        got: host.sshAddress,
        hint: "Remove it, or add proxmox.ssh",
      });
    }
  });
};

/** An extension built for one architecture cannot go into a schematic of the other. */
const architectureExtensions: Rule = ({ cluster, nodes, oci }, problems) => {
  const factory = cluster?.imageFactory;
  if (!factory) return;
  const ociArch =
    oci?.architecture ?? (/\.A\d\./.test(oci?.shape ?? "VM.Standard.A1.Flex") ? "arm64" : "amd64");
  const arm = nodes.find(({ node }) => node.platform === "oci" && ociArch === "arm64");
  if (!arm) return;
  const check = (path: (string | number)[], list: readonly string[] | undefined) =>
    list?.forEach((extension, i) => {
      if (X86_ONLY_EXTENSIONS.includes(extension)) {
        problems.add(
          [...path, i],
          `${extension} is built for x86 only, and nodes[${arm.index}] runs the arm64 image`,
          { got: extension, hint: "Move it to cluster.imageFactory.architectureExtensions.amd64" },
        );
      }
    });
  check(["cluster", "imageFactory", "extensions"], factory.extensions);
  check(["cluster", "imageFactory", "platformExtensions", "oci"], factory.platformExtensions?.oci);
  check(
    ["cluster", "imageFactory", "architectureExtensions", "arm64"],
    factory.architectureExtensions?.arm64,
  );
};

const openbaoCredentials: Rule = (input: RuleInput, problems: Problems) => {
  const openbao = input.openbao;
  if (!openbao) return;
  const mode = openbao.credentials ?? "serviceAccountKey";
  if (mode === "existingKey") {
    if (!openbao.serviceAccountEmail) {
      problems.add(
        ["openbao", "serviceAccountEmail"],
        "required when openbao.credentials is existingKey",
        {
          hint: "The service account whose key the gcpUnsealCredentials credential holds; the program grants it the unseal roles",
        },
      );
    }
    if (!input.secretKeys.has("gcpUnsealCredentials")) {
      problems.add(
        ["gcpUnsealCredentials"],
        "required as a secret when openbao.credentials is existingKey",
        {
          hint: "Let the CLI resolve it (Bitwarden gcp-unseal-credentials, or GCP_UNSEAL_CREDENTIALS): the key file's JSON",
        },
      );
    }
  } else if (openbao.serviceAccountEmail) {
    problems.add(["openbao", "serviceAccountEmail"], `is only used with credentials: existingKey`, {
      got: openbao.serviceAccountEmail,
    });
  }
  if (mode !== "workloadIdentity" && openbao.kubernetesServiceAccount) {
    problems.add(
      ["openbao", "kubernetesServiceAccount"],
      "is only used with credentials: workloadIdentity",
    );
  }
};

/** The rules of this module, in the order their problems are listed. */
export const INFRA_RULES: readonly Rule[] = [
  connectivity,
  routedSites,
  kubeletFamily,
  applyMode,
  proxmoxImage,
  architectureExtensions,
  openbaoCredentials,
];
