// Valid foundation stack files of varied shapes, for property tests: 1, 3 or 5 control planes on
// Proxmox or bare metal, workers on every platform, IPv4 and IPv6, a VIP or not, labels, patches,
// foundation services, every supported Talos release. Each rules test breaks them its own ways.
import fc from "fast-check";
import { strict as assert } from "node:assert";
import { StackConfigError } from "../../components/config/problems";
import { validatePlatformConfig } from "../../components/config/validate";
import {
  compareMinor,
  GENERATOR_MACHINERY,
  OLDEST_CONFIGURED,
  TALOS_RELEASES,
} from "../../components/talos/versions";

/** The Talos lines a stack may name: from the oldest the program configures. */
const CONFIGURED = TALOS_RELEASES.filter((r) => compareMinor(r.minor, OLDEST_CONFIGURED) >= 0);
import { GITHUB_KNOWN_HOSTS } from "../fixtures";

type Platform = "proxmox" | "baremetal" | "oci" | "openstack";

interface Shape {
  readonly controlPlanes: readonly ("proxmox" | "baremetal")[];
  readonly workers: readonly { platform: Platform; labels: boolean; mac: boolean }[];
  readonly release: number;
  readonly vip: boolean;
  readonly ipv6: boolean;
  readonly linkLocalGateway: boolean;
  readonly patches: readonly number[];
  readonly flux: boolean;
  readonly dns: boolean;
  readonly openbao: boolean;
  readonly podSubnets: boolean;
  readonly secretToken: boolean;
  readonly noScheduling: boolean;
}

/** Patches valid for every supported release, then ones valid from or up to a release. */
const PATCHES: readonly { patch: unknown; from?: string; upTo?: string }[] = [
  { patch: { machine: { certSANs: ["extra.example.net"] } } },
  { patch: "machine:\n  features:\n    diskQuotaSupport: true\n" },
  { patch: "cluster:\n  etcd:\n    advertisedSubnets: [192.0.2.0/24]\n" },
  {
    patch: { machine: { kubelet: { extraArgs: { "rotate-server-certificates": "true" } } } },
    upTo: "1.13",
  },
  { patch: { machine: { nodeTaints: { dedicated: "ingress:NoSchedule" } } }, upTo: "1.13" },
  {
    patch:
      "apiVersion: v1alpha1\nkind: TimeSyncConfig\nntp:\n  servers: [time.example.net]\n---\napiVersion: v1alpha1\nkind: ResolverConfig\nnameservers:\n  - address: 192.0.2.1\n",
    from: "1.12",
  },
];

const minorNumber = (minor: string) => Number(minor.split(".")[1]);

const LABELS = [
  { "topology.kubernetes.io/zone": "rack-1" },
  { "node.example.net/edge": "true", tier: "" },
  { "example.net/pool": "a.b_c-d" },
];

/** Stacks of varied shapes. */
export const shape: fc.Arbitrary<Shape> = fc.record({
  controlPlanes: fc.constantFrom(1, 3, 5).chain((n) =>
    fc.array(fc.constantFrom("proxmox" as const, "baremetal" as const), {
      minLength: n,
      maxLength: n,
    }),
  ),
  workers: fc.array(
    fc.record({
      platform: fc.constantFrom<Platform>("proxmox", "baremetal", "oci", "openstack"),
      labels: fc.boolean(),
      mac: fc.boolean(),
    }),
    { maxLength: 4 },
  ),
  release: fc.nat({ max: CONFIGURED.length - 1 }),
  vip: fc.boolean(),
  ipv6: fc.boolean(),
  linkLocalGateway: fc.boolean(),
  patches: fc.array(fc.nat({ max: PATCHES.length - 1 }), { maxLength: 3 }),
  flux: fc.boolean(),
  dns: fc.boolean(),
  openbao: fc.boolean(),
  podSubnets: fc.boolean(),
  secretToken: fc.boolean(),
  noScheduling: fc.boolean(),
});

const hex = (n: number) => n.toString(16).padStart(2, "0");

/** A stack file's values (plus the secret and present keys) of a given shape. */
export function build(s: Shape): any {
  const release = CONFIGURED[s.release];
  // A release newer than the provider's generator needs a pinned contract it knows; the patches
  // are the contract's.
  const pinned = minorNumber(release.minor) > minorNumber(GENERATOR_MACHINERY);
  const minor = pinned ? minorNumber(GENERATOR_MACHINERY) : minorNumber(release.minor);
  const nodes: any[] = [];
  const staticNode = (i: number, platform: "proxmox" | "baremetal", role: string, mac: boolean) => {
    const v4 = `192.0.2.${11 + i}`;
    const network: any = { addresses: [`${v4}/24`], gateway: "192.0.2.1" };
    if (s.ipv6) {
      network.addresses.push(`2001:db8::${(11 + i).toString(16)}/64`);
      network.gateway6 = s.linkLocalGateway ? "fe80::1" : "2001:db8::1";
    }
    if (mac || platform === "baremetal") network.mac = `02:00:00:00:00:${hex(i + 1)}`;
    return platform === "proxmox"
      ? {
          name: `${role === "controlplane" ? "cp" : "w"}-${i}`,
          role,
          platform,
          // One site for the machines on the LAN, so a VIP may span them.
          site: "lan",
          network,
          proxmox: { host: role === "controlplane" ? `pve${i + 1}` : "pve1", vmId: 100 + i },
        }
      : {
          name: `${role === "controlplane" ? "cp" : "w"}-${i}`,
          role,
          platform,
          site: "lan",
          network,
          baremetal: { address: v4 },
        };
  };
  s.controlPlanes.forEach((platform, i) =>
    nodes.push(staticNode(i, platform, "controlplane", false)),
  );
  s.workers.forEach((worker, j) => {
    const i = nodes.length;
    const node =
      worker.platform === "oci"
        ? {
            name: `w-${i}`,
            role: "worker",
            platform: "oci",
            oci: { privateIp: `198.51.100.${20 + i}` },
          }
        : worker.platform === "openstack"
          ? {
              name: `w-${i}`,
              role: "worker",
              platform: "openstack",
              openstack: { fixedIp: `203.0.113.${20 + i}` },
            }
          : staticNode(i, worker.platform, "worker", worker.mac);
    if (worker.labels) (node as any).labels = LABELS[j % LABELS.length];
    nodes.push(node);
  });
  const patches = s.patches
    .map((i) => PATCHES[i])
    .filter(
      (p) =>
        (p.from === undefined || minorNumber(p.from) <= minor) &&
        (p.upTo === undefined || minor <= minorNumber(p.upTo)),
    )
    .map((p) => p.patch);
  const values: any = {
    cluster: {
      name: "demo",
      endpoint: "api.demo.example.net",
      talosVersion: `v${release.minor}.3`,
      ...(pinned ? { configContract: `v${GENERATOR_MACHINERY}.9` } : {}),
      kubernetesVersion: `${release.kubernetes.max}.1`,
      network: {
        nameservers: ["192.0.2.1"],
        // Cloud workers are sites of their own: the sites reach each other over KubeSpan.
        ...(s.workers.some((w) => w.platform === "oci" || w.platform === "openstack")
          ? { connectivity: "kubespan" }
          : {}),
        ...(s.podSubnets ? { podSubnets: ["10.128.0.0/16"] } : {}),
      },
      ...(s.vip ? { vip: "192.0.2.10" } : {}),
      ...(patches.length > 0 ? { patches: { all: patches } } : {}),
      ...(s.noScheduling && s.workers.length > 0 ? { allowSchedulingOnControlPlanes: false } : {}),
    },
    nodes,
  };
  const platforms = new Set(nodes.map((n) => n.platform));
  if (platforms.has("proxmox")) {
    values.proxmox = {
      endpoint: "https://pve1.example.net:8006/",
      hosts: [1, 2, 3, 4, 5].map((i) => ({ name: `pve${i}` })),
    };
  }
  if (platforms.has("oci")) {
    values.oci = {
      region: "eu-frankfurt-1",
      compartmentId: "ocid1.compartment.oc1..example",
      subnetId: "ocid1.subnet.oc1.eu-frankfurt-1.example",
      image: { id: "ocid1.image.oc1..example" },
    };
  }
  if (platforms.has("openstack")) {
    values.openstack = { networkId: "net", subnetId: "subnet", flavor: "m1.large" };
  }
  if (s.dns || s.openbao) values.gcp = { project: "example-homelab", region: "europe-west3" };
  if (s.openbao) values.openbao = { rotationPeriod: "7776000s" };
  if (s.dns) {
    values.dns = {
      zone: "example-net",
      domain: "example.net",
      records: [{ name: "*.apps.demo.example.net", values: ["192.0.2.60"] }],
    };
  }
  if (s.flux) {
    values.flux = {
      version: "v2.7.3",
      repository: "ssh://git@github.com/example/homelab.git",
      branch: "main",
      path: "clusters/demo",
      knownHosts: GITHUB_KNOWN_HOSTS,
    };
  }
  const secretKeys = new Set<string>([
    ...(s.flux ? ["fluxDeployKey"] : []),
    ...(s.secretToken ? ["proxmoxApiToken"] : []),
  ]);
  values.secretKeys = secretKeys;
  values.presentKeys = new Set([
    ...Object.keys(values).filter((k) => k !== "secretKeys"),
    ...secretKeys,
  ]);
  return values;
}

/** The problems validation reports for `values` (none when valid). */
export function problems(values: any): readonly string[] {
  try {
    validatePlatformConfig(values, "Pulumi.test.yaml");
    return [];
  } catch (error) {
    if (error instanceof StackConfigError) return error.problems;
    throw error;
  }
}

/** A change that breaks one rule, and the key the problem must name; undefined where it does not apply. */
export type Mutation = (values: any) => string | undefined;

/** For each mutation, a property: applied to any valid stack it applies to, a problem names the key. */
export function itRefusesMutations(mutations: Readonly<Record<string, Mutation>>): void {
  for (const [name, mutate] of Object.entries(mutations)) {
    it(`refuses ${name}, naming the key (property)`, () => {
      let applied = 0;
      fc.assert(
        fc.property(shape, (s) => {
          const values = build(s);
          const key = mutate(values);
          fc.pre(key !== undefined);
          applied += 1;
          const found = problems(values);
          assert.ok(
            found.some((line) => line.startsWith(`${key}:`)),
            `expected a problem naming ${key}; got:\n${found.join("\n")}`,
          );
        }),
        { numRuns: 60 },
      );
      assert.ok(applied > 0, "the mutation applied to some generated stacks");
    });
  }
}

/** The node indexes with a static network. */
export const staticIndexes = (values: any) =>
  values.nodes
    .map((n: any, i: number) => (n.network ? i : -1))
    .filter((i: number) => i >= 0) as number[];
