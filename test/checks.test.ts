// The stack-file checks of issue #11: for each rule a stack file that breaks it (run through the
// program: the error names the key and nothing is registered) and a valid neighbour that passes.
import { strict as assert } from "node:assert";
import { StackConfigError, validateAppConfig, validateBootstrapConfig } from "../components/config";
import {
  cloudCluster,
  GITHUB_KNOWN_HOSTS,
  mixedCluster,
  problemsOf,
  proxmoxCluster,
} from "./fixtures";
import { readStackFile, runFoundation, setupRun, StackValues } from "./harness";
import { Recorder } from "./mocks";

type Change = (values: any) => void;

/** Three OCI control planes in one listed availability domain, spread over the fault domains. */
function ociControlPlanes(): StackValues {
  const values: any = cloudCluster();
  delete values.cluster.vip;
  values.oci.availabilityDomains = ["Uocm:EU-FRANKFURT-1-AD-1"];
  values.nodes = [1, 2, 3].map((i) => ({
    name: `oci-cp-${i}`,
    role: "controlplane",
    platform: "oci",
    oci: { privateIp: `198.51.100.${10 + i}` },
  }));
  delete values.proxmox;
  delete values.openstack;
  return values;
}

/** What Nova's anti-affinity makes of a second control plane pinned to compute-1. */
const ANTI_AFFINITY_COMPUTE_1 = (index: number) =>
  `nodes[${index}].openstack.availabilityZone: pins a second control plane to OpenStack host compute-1 (nodes[0] is there), which the control planes' anti-affinity server group forbids; Nova would not schedule it; got "nova:compute-1". Pin it to another host, or set openstack.controlPlaneServerGroup to soft-anti-affinity`;

/** Three OpenStack control planes pinned to compute hosts (`zone:host`). */
function openstackControlPlanes(): StackValues {
  const values: any = cloudCluster();
  delete values.cluster.vip;
  values.nodes = [1, 2, 3].map((i) => ({
    name: `os-cp-${i}`,
    role: "controlplane",
    platform: "openstack",
    openstack: { availabilityZone: `nova:compute-${i}` },
  }));
  delete values.proxmox;
  delete values.oci;
  return values;
}

/** The Proxmox cluster with the foundation services on. */
function withServices(): StackValues {
  const values: any = proxmoxCluster();
  values.gcp = { project: "example-homelab", region: "europe-west3" };
  values.openbao = { rotationPeriod: "7776000s" };
  values.dns = {
    zone: "example-net",
    domain: "example.net",
    records: [{ name: "*.apps.demo.example.net", values: ["192.0.2.60"] }],
  };
  values.flux = {
    version: "v2.7.3",
    repository: "ssh://git@github.com/example/homelab.git",
    branch: "main",
    path: "clusters/demo",
    knownHosts: GITHUB_KNOWN_HOSTS,
  };
  return values;
}

const DEPLOY_KEY = { fluxDeployKey: "FAKE-SECRET-deploy-key" };

interface Case {
  readonly rule: string;
  readonly base: () => StackValues;
  readonly broken: Change;
  readonly problems: readonly string[];
  /** A change of the same base that must pass. */
  readonly valid: Change;
  /** Config keys given as secrets. */
  readonly secrets?: Record<string, string>;
  /** Config keys given in plain text besides the base's values. */
  readonly plain?: Record<string, string>;
}

const cases: Case[] = [
  // 1. Quorum placement
  {
    rule: "two of three control planes on one Proxmox host",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[2].proxmox.host = "pve1"),
    problems: [
      "nodes[2].proxmox.host: nodes[0].proxmox.host, nodes[2].proxmox.host put 2 of the 3 control planes on Proxmox host pve1; losing it would lose etcd quorum. At most 1 of 3 control planes may share a failure domain: move one of them elsewhere",
    ],
    // Five control planes may put two on one host.
    valid: (v) => {
      v.nodes.push(
        ...[4, 5].map((i) => ({
          name: `cp-${i}`,
          role: "controlplane",
          platform: "proxmox",
          network: { addresses: [`192.0.2.1${i}/24`], gateway: "192.0.2.1" },
          proxmox: { host: `pve${i - 3}`, vmId: 100 + i },
        })),
      );
    },
  },
  {
    rule: "two of three control planes in one OCI fault domain",
    base: ociControlPlanes,
    broken: (v) => (v.nodes[1].oci.faultDomain = "FAULT-DOMAIN-1"),
    problems: [
      "nodes[1].oci.faultDomain: nodes[0], nodes[1].oci.faultDomain put 2 of the 3 control planes on OCI fault domain FAULT-DOMAIN-1 of Uocm:EU-FRANKFURT-1-AD-1; losing it would lose etcd quorum. At most 1 of 3 control planes may share a failure domain: move one of them elsewhere",
    ],
    valid: (v) => (v.nodes[1].oci.faultDomain = "FAULT-DOMAIN-2"),
  },
  {
    rule: "two of three control planes on one OpenStack compute host",
    base: openstackControlPlanes,
    broken: (v) => (v.nodes[2].openstack.availabilityZone = "nova:compute-1"),
    problems: [
      "nodes[2].openstack.availabilityZone: nodes[0].openstack.availabilityZone, nodes[2].openstack.availabilityZone put 2 of the 3 control planes on OpenStack host compute-1; losing it would lose etcd quorum. At most 1 of 3 control planes may share a failure domain: move one of them elsewhere",
      ANTI_AFFINITY_COMPUTE_1(2),
    ],
    valid: (v) => (v.nodes[2].openstack.availabilityZone = "nova"),
  },
  {
    rule: "two OpenStack control planes pinned to one host of their anti-affinity server group",
    base: () => {
      const values: any = openstackControlPlanes();
      values.nodes.push(
        ...[4, 5].map((i) => ({ ...values.nodes[0], name: `os-cp-${i}`, openstack: {} })),
      );
      return values;
    },
    // 2 of 5 on one host keeps quorum, but Nova's anti-affinity refuses to schedule the second.
    broken: (v) => (v.nodes[1].openstack.availabilityZone = "nova:compute-1"),
    problems: [ANTI_AFFINITY_COMPUTE_1(1)],
    valid: (v) => {
      v.nodes[1].openstack.availabilityZone = "nova:compute-1";
      v.openstack.controlPlaneServerGroup = "soft-anti-affinity";
    },
  },
  // 2. Talos patches against the release's schema
  {
    rule: "a patch with a misspelt key",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.patches = { all: [{ machine: { kubelet: { extraArg: {} } } }] }),
    problems: [
      "cluster.patches.all[0]: sets machine.kubelet.extraArg, which is not a Talos 1.13 setting. Did you mean machine.kubelet.extraArgs?",
    ],
    valid: (v) =>
      (v.cluster.patches = { all: [{ machine: { kubelet: { extraArgs: { v: "2" } } } }] }),
  },
  {
    rule: "a patch with a value of the wrong type",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].patches = ["machine:\n  certSANs: api.example.net\n"]),
    problems: ['nodes[0].patches[0]: machine.certSANs must be a list; got "api.example.net"'],
    valid: (v) => (v.nodes[0].patches = ["machine:\n  certSANs: [api.example.net]\n"]),
  },
  {
    rule: "a document of a kind Talos does not know, in a multi-document patch",
    base: proxmoxCluster,
    broken: (v) =>
      (v.cluster.patches = {
        controlplane: [
          "machine:\n  sysctls:\n    vm.swappiness: '10'\n---\napiVersion: v1alpha1\nkind: TimeSyncConfg\nntp:\n  servers: [time.example.net]\n",
        ],
      }),
    problems: [
      "cluster.patches.controlplane[0]: in document 2 (TimeSyncConfg), has kind TimeSyncConfg, which Talos 1.13 does not know. Did you mean TimeSyncConfig?",
    ],
    valid: (v) =>
      (v.cluster.patches = {
        controlplane: [
          "machine:\n  sysctls:\n    vm.swappiness: '10'\n---\napiVersion: v1alpha1\nkind: TimeSyncConfig\nntp:\n  servers: [time.example.net]\n",
        ],
      }),
  },
  {
    rule: "a patch setting machine.registries, which Talos 1.13 left out of its schema",
    base: proxmoxCluster,
    broken: (v) =>
      (v.nodes[1].patches = [
        { machine: { registries: { mirrors: { "docker.io": { endpoints: ["https://m"] } } } } },
      ]),
    problems: [
      "nodes[1].patches[0]: sets machine.registries, which Talos 1.13 has deprecated (it is not in its configuration schema). Use RegistryMirrorConfig, RegistryAuthConfig and RegistryTLSConfig documents",
    ],
    valid: (v) =>
      (v.nodes[1].patches = [
        {
          apiVersion: "v1alpha1",
          kind: "RegistryMirrorConfig",
          name: "docker.io",
          endpoints: [{ url: "https://mirror.example.net" }],
        },
      ]),
  },
  {
    rule: "machine.network on Talos 1.13 (the same patch is valid for Talos 1.11)",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[1].patches = [{ machine: { network: { hostname: "cp-2" } } }]),
    problems: [
      "nodes[1].patches[0]: sets machine.network, which Talos 1.13 has deprecated (it is not in its configuration schema). Use HostnameConfig, LinkConfig, Layer2VIPConfig and ResolverConfig documents",
    ],
    valid: (v) => {
      v.nodes[1].patches = [{ machine: { network: { hostname: "cp-2" } } }];
      v.cluster.talosVersion = "v1.11.6";
      v.cluster.kubernetesVersion = "1.34.1";
    },
  },
  // 3. No identity or secrets in patches
  {
    rule: "patches that set the cluster's identity and secrets",
    base: proxmoxCluster,
    broken: (v) =>
      (v.cluster.patches = {
        all: [{ cluster: { secret: "c2VjcmV0", etcd: { ca: { crt: "x", key: "y" } } } }],
        worker: ["machine:\n  token: abcdef.0123456789abcdef\n"],
      }),
    problems: [
      "cluster.patches.all[0]: sets cluster.secret, part of the cluster's identity and secrets. The cluster's identity and secrets come from its secrets resource only; remove this from the patch",
      "cluster.patches.all[0]: sets cluster.etcd.ca, part of the cluster's identity and secrets. The cluster's identity and secrets come from its secrets resource only; remove this from the patch",
      "cluster.patches.worker[0]: sets machine.token, part of the cluster's identity and secrets. The cluster's identity and secrets come from its secrets resource only; remove this from the patch",
    ],
    // Extra trusted CAs are not identity.
    valid: (v) => (v.cluster.patches = { all: [{ machine: { acceptedCAs: [{ crt: "PEM" }] } }] }),
  },
  // 4. Credentials are secrets
  {
    rule: "a credential in plain text",
    base: proxmoxCluster,
    plain: { proxmoxApiToken: "root@pam!pulumi=FAKE-SECRET-token" },
    broken: () => undefined,
    problems: [
      "proxmoxApiToken: is a credential written in plain text in the stack file (value not shown). Store it encrypted: run `pulumi config set --secret proxmoxApiToken --stack test` and enter the value when asked, or leave it out and let the CLI supply it (docs/credentials.md)",
    ],
    valid: () => undefined,
  },
  {
    rule: "a Flux repository URL with a token inside",
    base: withServices,
    secrets: DEPLOY_KEY,
    broken: (v) =>
      (v.flux.repository = "https://x-access-token:FAKE-SECRET-ghp@github.com/example/homelab.git"),
    problems: [
      'flux.repository: carries a credential in the URL (a user:password), which would be stored in plain text; got "https://***:***@github.com/example/homelab.git". Use an ssh:// URL with the fluxDeployKey secret (docs/credentials.md), or a public https:// URL',
    ],
    valid: (v) => (v.flux.repository = "https://github.com/example/homelab.git"),
  },
  // 5. Unknown top-level keys
  {
    rule: "a misspelt top-level key",
    base: withServices,
    secrets: DEPLOY_KEY,
    plain: { dsn: "example-net" },
    broken: () => undefined,
    problems: ["talos-platform:dsn: unknown key. Did you mean talos-platform:dns?"],
    valid: () => undefined,
  },
  // 6. Addresses that cannot work
  {
    rule: "a gateway that is the node's own address",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[1].network.gateway = "192.0.2.12"),
    problems: [
      "nodes[1].network.gateway: is the node's own address; a gateway is the router the node sends through; got \"192.0.2.12\". Use the router's address on the node's subnet",
    ],
    valid: (v) => (v.nodes[1].network.gateway = "192.0.2.254"),
  },
  {
    rule: "a VIP that is the gateway",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.vip = "192.0.2.1"),
    problems: [
      'cluster.vip: is the gateway of nodes[0] (network.gateway); got "192.0.2.1". The VIP needs an unused address of the control planes\' subnet',
    ],
    valid: (v) => (v.cluster.vip = "192.0.2.2"),
  },
  {
    rule: "a VIP that is the subnet's broadcast address",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.vip = "192.0.2.255"),
    problems: [
      'cluster.vip: is the broadcast address of subnet 192.0.2.0/24 (nodes[0]); got "192.0.2.255". The VIP needs an unused host address of the control planes\' subnet',
    ],
    valid: (v) => (v.cluster.vip = "192.0.2.254"),
  },
  {
    rule: "a node address that is its subnet's network address",
    base: proxmoxCluster,
    broken: (v) => {
      v.nodes[2].network.addresses = ["192.0.2.128/25"];
      v.nodes[2].network.gateway = "192.0.2.129";
    },
    problems: [
      'cluster.vip: is not in the subnet of every control plane; got "192.0.2.10". A layer-2 VIP must share a subnet with every control plane; nodes[2] has 192.0.2.128/25',
      'nodes[2].network.addresses[0]: is the network address of its subnet 192.0.2.128/25, not a host address; got "192.0.2.128/25". Give the node an address inside the subnet, e.g. the network address + 11',
    ],
    valid: (v) => (v.nodes[2].network.addresses = ["192.0.2.13/25"]),
  },
  {
    rule: "a pod subnet overlapping the nodes' network",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.network.podSubnets = ["192.0.0.0/16"]),
    problems: [
      'cluster.network.podSubnets[0]: overlaps the node network of nodes[0].network.addresses[0] (192.0.2.11/24); got "192.0.0.0/16". Pod and service ranges must be separate from the networks the nodes are on',
    ],
    valid: (v) => (v.cluster.network.podSubnets = ["10.244.0.0/16"]),
  },
  {
    rule: "pod and service subnets that overlap",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.network.podSubnets = ["10.200.0.0/16"];
      v.cluster.network.serviceSubnets = ["10.200.128.0/20"];
    },
    problems: [
      'cluster.network.serviceSubnets[0]: overlaps cluster.network.podSubnets (10.200.0.0/16); got "10.200.128.0/20". Pods and services need separate ranges',
    ],
    valid: (v) => {
      v.cluster.network.podSubnets = ["10.200.0.0/16"];
      v.cluster.network.serviceSubnets = ["10.201.0.0/20"];
    },
  },
  {
    rule: "nodes inside Talos' default pod subnet",
    base: proxmoxCluster,
    broken: (v) => {
      v.nodes.forEach((node: any, i: number) => {
        node.network = { addresses: [`10.244.0.${11 + i}/24`], gateway: "10.244.0.1" };
      });
      v.cluster.vip = "10.244.0.10";
    },
    problems: [
      'nodes[0].network.addresses[0]: overlaps Talos\' default pod subnet 10.244.0.0/16; got "10.244.0.11/24". Set cluster.network.podSubnets to a range the nodes do not use',
    ],
    valid: (v) => {
      v.nodes.forEach((node: any, i: number) => {
        node.network = { addresses: [`10.244.0.${11 + i}/24`], gateway: "10.244.0.1" };
      });
      v.cluster.vip = "10.244.0.10";
      v.cluster.network.podSubnets = ["10.128.0.0/16"];
    },
  },
  {
    rule: "an IPv6 gateway outside the node's subnets (a link-local one is fine)",
    base: mixedCluster,
    broken: (v) => (v.nodes[4].network.gateway6 = "2001:db8:ffff::1"),
    problems: [
      'nodes[4].network.gateway6: is outside every IPv6 subnet of the node; got "2001:db8:ffff::1". The node\'s addresses are 192.0.2.31/24, 2001:db8::31/64',
    ],
    valid: (v) => (v.nodes[4].network.gateway6 = "fe80::1"),
  },
  // 7. Unicast MACs
  {
    rule: "a multicast MAC",
    base: mixedCluster,
    broken: (v) => (v.nodes[3].network.mac = "01:00:5e:00:00:21"),
    problems: [
      'nodes[3].network.mac: is a multicast MAC (the first byte is odd); a NIC needs a unicast MAC; got "01:00:5e:00:00:21". Use the NIC\'s own MAC, or a locally administered one such as 02:00:00:00:00:11',
    ],
    valid: (v) => (v.nodes[3].network.mac = "02:00:5e:00:00:21"),
  },
  // 8. Somewhere to run workloads
  {
    rule: "no workers and no scheduling on control planes",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.allowSchedulingOnControlPlanes = false),
    problems: [
      "cluster.allowSchedulingOnControlPlanes: is false, but the cluster has no workers, so no workload could run anywhere; got false. Add workers, or leave the key out (without workers it defaults to true)",
    ],
    valid: (v) => {
      v.cluster.allowSchedulingOnControlPlanes = false;
      v.nodes.push({
        name: "worker-1",
        role: "worker",
        platform: "proxmox",
        network: { addresses: ["192.0.2.21/24"], gateway: "192.0.2.1" },
        proxmox: { host: "pve1", vmId: 121 },
      });
    },
  },
  // 9. Kubernetes syntax of labels and taints
  {
    rule: "a label key with two slashes and a taint without a valid effect",
    base: proxmoxCluster,
    broken: (v) => {
      v.nodes[0].labels = { "example.net/rack/a": "r1" };
      v.nodes[1].patches = [{ machine: { nodeTaints: { dedicated: "ingress:NoWay" } } }];
    },
    problems: [
      'nodes[0].labels: label key "example.net/rack/a" has more than one /. Label keys are [prefix/]name, e.g. topology.kubernetes.io/zone',
      'nodes[1].patches[0]: taint "dedicated" in machine.nodeTaints needs an effect (NoSchedule, PreferNoSchedule, NoExecute), written value:Effect or Effect; got "ingress:NoWay". For example dedicated: ingress:NoSchedule',
    ],
    valid: (v) => {
      v.nodes[0].labels = { "example.net/rack": "r1" };
      v.nodes[1].patches = [{ machine: { nodeTaints: { dedicated: "ingress:NoSchedule" } } }];
    },
  },
  {
    rule: "a label value Kubernetes refuses",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[2].labels = { "topology.kubernetes.io/zone": "rack 3" }),
    problems: [
      "nodes[2].labels: the value of label \"topology.kubernetes.io/zone\" must be letters, digits, '-', '_' or '.' starting and ending with a letter or digit; got \"rack 3\"",
    ],
    valid: (v) => (v.nodes[2].labels = { "topology.kubernetes.io/zone": "rack-3" }),
  },
  // 10. Services
  {
    rule: "a Flux branch that is no Git ref and a path outside the repository",
    base: withServices,
    secrets: DEPLOY_KEY,
    broken: (v) => {
      v.flux.branch = "release..1";
      v.flux.path = "clusters/../../elsewhere";
    },
    problems: [
      'flux.branch: is not a valid Git branch name: it contains ..; got "release..1"',
      'flux.path: leads out of the repository (..); got "clusters/../../elsewhere"',
    ],
    valid: (v) => {
      v.flux.branch = "release/1.0";
      v.flux.path = "./clusters/../clusters/demo";
    },
  },
  {
    rule: "known_hosts that do not parse, or miss the repository's host",
    base: withServices,
    secrets: DEPLOY_KEY,
    broken: (v) => (v.flux.knownHosts = "github.com ssh-ed25519 AAAAexample"),
    problems: [
      "flux.knownHosts: line 1 is not a known_hosts line: it has a key that is not an ssh-ed25519 key. Write `host key-type base64-key`, e.g. the output of `ssh-keyscan github.com`",
    ],
    valid: (v) => (v.flux.knownHosts = `# GitHub\n${GITHUB_KNOWN_HOSTS}\n`),
  },
  {
    rule: "known_hosts without the repository's host",
    base: withServices,
    secrets: DEPLOY_KEY,
    broken: (v) => (v.flux.repository = "ssh://git@git.example.net:2222/example/homelab.git"),
    problems: [
      "flux.knownHosts: has no line for [git.example.net]:2222, the repository's host. Add the output of `ssh-keyscan -p 2222 git.example.net`",
    ],
    valid: (v) => {
      v.flux.repository = "ssh://git@git.example.net:2222/example/homelab.git";
      v.flux.knownHosts = GITHUB_KNOWN_HOSTS.replace("github.com", "[git.example.net]:2222");
    },
  },
  {
    rule: "DNS records repeating each other or the endpoint's own name",
    base: withServices,
    secrets: DEPLOY_KEY,
    broken: (v) =>
      v.dns.records.push(
        { name: "*.apps.demo.example.net.", values: ["192.0.2.61"] },
        { name: "api.demo.example.net", values: ["192.0.2.10"] },
      ),
    problems: [
      'dns.records[1].name: repeats dns.records[0] (same name and type); got "*.apps.demo.example.net.". List every value of a name and type in one record',
      'dns.records[2].name: is the API endpoint\'s name, whose record the program creates itself; got "api.demo.example.net". Leave it out: cluster.endpoint already gets its record',
    ],
    valid: (v) => v.dns.records[0].values.push("192.0.2.61"),
  },
  {
    rule: "an OpenBao key rotating more often than Cloud KMS allows",
    base: withServices,
    secrets: DEPLOY_KEY,
    broken: (v) => (v.openbao.rotationPeriod = "3600s"),
    problems: [
      'openbao.rotationPeriod: is shorter than one day, Cloud KMS\' shortest rotation period; got "3600s". Use 86400s (one day) to 3153600000s; the default is 7776000s (90 days)',
    ],
    valid: (v) => (v.openbao.rotationPeriod = "86400s"),
  },
  {
    rule: "a Proxmox endpoint over plain http",
    base: proxmoxCluster,
    broken: (v) => (v.proxmox.endpoint = "http://pve1.example.net:8006/"),
    problems: [
      'proxmox.endpoint: expected an https:// URL of the Proxmox API; got "http://pve1.example.net:8006/"',
    ],
    valid: (v) => (v.proxmox.endpoint = "https://pve1.example.net:8006/"),
  },
];

describe("stack-file checks", () => {
  for (const c of cases) {
    const broken = () => {
      const values: any = structuredClone(c.base());
      c.broken(values);
      return { ...values, ...c.plain };
    };

    it(`refuses ${c.rule}, naming the key, before anything is registered`, async () => {
      const recorder = new Recorder();
      await assert.rejects(
        runFoundation(broken(), { recorder, secrets: c.secrets, preview: true }),
        (error: unknown) => {
          assert.ok(error instanceof StackConfigError, String(error));
          assert.deepEqual(error.problems, c.problems);
          return true;
        },
      );
      assert.equal(recorder.resources.length, 0, "no resource registered");
    });

    it(`accepts the valid neighbour of ${c.rule}`, () => {
      const secretKeys = new Set(Object.keys(c.secrets ?? {}));
      assert.deepEqual(problemsOf(c.base, c.valid, secretKeys), []);
    });
  }

  it("takes the same credential when it is a secret", async () => {
    const { recorder } = await runFoundation(proxmoxCluster(), {
      secrets: { proxmoxApiToken: "root@pam!pulumi=FAKE-SECRET-token" },
      preview: true,
    });
    assert.ok(recorder.resources.length > 0);
  });
});

describe("every problem in one report", () => {
  it("a section that is not a mapping hides no problem of the others", () => {
    assert.deepEqual(
      problemsOf(proxmoxCluster, (v) => {
        v.proxmox = "pve1.example.net";
        v.nodes[1].name = "CP_2";
        v.nodes[2].patches = [{ machine: { kubelet: { extraArg: {} } } }];
      }),
      [
        'proxmox: expected a mapping; got "pve1.example.net"',
        'nodes[1].name: expected a lowercase DNS label (letters, digits, hyphens; at most 63 characters); got "CP_2"',
        "nodes[2].patches[0]: sets machine.kubelet.extraArg, which is not a Talos 1.13 setting. Did you mean machine.kubelet.extraArgs?",
      ],
    );
  });

  it("checks the patches of a cluster or node that failed its schema", () => {
    assert.deepEqual(
      problemsOf(proxmoxCluster, (v) => {
        v.cluster.vip = "not-an-ip";
        v.cluster.patches = { all: [{ machine: { kubelet: { extraArg: {} } } }] };
        v.nodes[0].proxmox.vmId = 5;
        v.nodes[0].patches = [{ machine: { token: "abcdef.0123456789abcdef" } }];
      }),
      [
        'cluster.vip: expected an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10; got "not-an-ip"',
        "nodes[0].proxmox.vmId: Proxmox VM IDs start at 100; got 5",
        "cluster.patches.all[0]: sets machine.kubelet.extraArg, which is not a Talos 1.13 setting. Did you mean machine.kubelet.extraArgs?",
        "nodes[0].patches[0]: sets machine.token, part of the cluster's identity and secrets. The cluster's identity and secrets come from its secrets resource only; remove this from the patch",
      ],
    );
  });

  it("estimates cloud nodes' user data even when other sections have problems", () => {
    const problems = problemsOf(cloudCluster, (v) => {
      v.cluster.patches = { worker: [{ machine: { sysctls: { "x.y": "z".repeat(30_000) } } }] };
      v.nodes[0].proxmox.vmId = 5;
    });
    assert.equal(problems[0], "nodes[0].proxmox.vmId: Proxmox VM IDs start at 100; got 5");
    assert.match(
      problems[1],
      /^nodes\[3\]: the machine config of oci-1 is about [\d,]+ bytes as user data, over OCI's limit of 32,000 bytes/,
    );
    // OpenStack allows 65,535 bytes, so only the three OCI workers are over.
    assert.equal(problems.length, 4);
  });
});

describe("messages in the project's own words", () => {
  const GENERIC =
    /Too (small|big)|Invalid (input|key|option|URL|element)|Unrecognized key|expected (number|string|array|object) to|received (string|number|boolean|object|array|undefined)|not a valid JSON object/;

  it("uses no validator phrasing, whatever is broken", () => {
    const problems = problemsOf(mixedCluster, (v) => {
      v.nodes[0].proxmox.cores = 0;
      v.nodes[0].proxmox.memory = "lots";
      v.nodes[1].proxmox.vmId = 1.5;
      v.nodes[1].labels = ["a"];
      v.nodes[2].platform = "vmware";
      v.nodes[3].network.addresses = [];
      v.nodes[4].installDisk = 3;
      v.proxmox.hosts = [];
      v.proxmox.extra = true;
      v.cluster.network.cni = "calico";
      v.cluster.health = { timeout: 10 };
      v.cluster.imageFactory.platformExtensions = { vmware: [] };
      v.cluster.patches = { all: [true] };
    });
    assert.ok(problems.length >= 12, problems.join("\n"));
    const generic = problems.filter((p) => GENERIC.test(p));
    assert.deepEqual(generic, []);
    assert.ok(problems.includes("nodes[0].proxmox.cores: must be greater than 0; got 0"));
    assert.ok(problems.includes("proxmox.hosts: list at least one host; got []"));
    assert.ok(
      problems.includes('cluster.network.cni: expected one of flannel, cilium, none; got "calico"'),
    );
  });

  it("tells a YAML user who wrote a scalar for a section that a mapping is expected", async () => {
    const recorder = new Recorder();
    await assert.rejects(
      runFoundation({ ...proxmoxCluster(), cluster: "demo" }, { recorder, preview: true }),
      (error: unknown) => {
        assert.ok(error instanceof StackConfigError, String(error));
        assert.deepEqual(error.problems, ['cluster: expected a mapping; got "demo"']);
        return true;
      },
    );
    assert.equal(recorder.resources.length, 0);
  });

  it("reports a VIP outside the control planes' subnets once, not once per control plane", () => {
    const problems = problemsOf(proxmoxCluster, (v) => (v.cluster.vip = "198.51.100.10"));
    assert.equal(problems.filter((p) => p.startsWith("cluster.vip:")).length, 1);
  });
});

describe("app and bootstrap layer checks", () => {
  const APP = "talos-platform-app";
  const appValues = () => structuredClone(readStackFile("staging", "app", APP)) as any;
  const appProblems = (
    change: (v: any) => void,
    secretKeys: ReadonlySet<string> = new Set(["openbaoToken", "grafanaAuth"]),
  ): readonly string[] => {
    const values = appValues();
    change(values);
    try {
      validateAppConfig(values, "staging", secretKeys);
      return [];
    } catch (error) {
      if (error instanceof StackConfigError) return error.problems;
      throw error;
    }
  };

  it("refuses an app credential in plain text with the command that stores it encrypted", () => {
    assert.deepEqual(
      appProblems((v) => (v.openbaoToken = "FAKE-SECRET-token"), new Set(["grafanaAuth"])),
      [
        "openbaoToken: is a credential written in plain text in the stack file (value not shown). Store it encrypted: run `pulumi config set --secret openbaoToken --stack staging --cwd app` and enter the value when asked, or leave it out and let the CLI supply it (docs/credentials.md)",
      ],
    );
  });

  it("refuses an OpenBao address or a data source URL with a credential inside", () => {
    assert.deepEqual(
      appProblems((v) => {
        v.openbao.address = "https://openbao.staging.example.net/?token=FAKE-SECRET";
        v.grafana.dataSources[0].url = "http://admin:FAKE-SECRET@prometheus.monitoring.svc:9090";
      }),
      [
        'openbao.address: carries a credential in the URL (a token parameter), which would be stored in plain text; got "https://openbao.staging.example.net/?token=***". Give the bare URL; the token is the openbaoToken secret (docs/credentials.md)',
        'grafana.dataSources[0].url: carries a credential in the URL (a user:password), which would be stored in plain text; got "http://***:***@prometheus.monitoring.svc:9090". Give the bare URL and let the data source authenticate another way',
      ],
    );
  });

  it("answers an unknown top-level app key with the one probably meant", () => {
    assert.deepEqual(
      appProblems((v) => {
        v.grafna = v.grafana;
        delete v.grafana;
      }),
      ["talos-platform-app:grafna: unknown key. Did you mean talos-platform-app:grafana?"],
    );
  });

  it("answers a misspelt app setting with the setting meant, a swapped pair of letters included", () => {
    assert.deepEqual(
      appProblems((v) => {
        v.openbao.kvmount = v.openbao.kvMount;
        delete v.openbao.kvMount;
        v.grafana.folders[0].titel = v.grafana.folders[0].title;
        delete v.grafana.folders[0].title;
      }),
      [
        "openbao.kvmount: unknown key. Did you mean kvMount?",
        "grafana.folders[0].title: required",
        "grafana.folders[0].titel: unknown key. Did you mean title?",
      ],
    );
  });

  it("names a bad inline policy name without echoing the policy", () => {
    assert.deepEqual(
      appProblems(
        (v) => (v.openbao.policies = { Bad_Name: 'path "secret/*" { capabilities = ["read"] }' }),
      ),
      [
        "openbao.policies.Bad_Name: not a valid key here: expected a lowercase name (letters, digits, - and _)",
      ],
    );
  });

  it("runs the file and policy checks after a schema error too", () => {
    assert.deepEqual(
      appProblems((v) => {
        v.openbao.kvMount = "Secret Store";
        v.openbao.policyDir = "../test/fixtures/app/bad-policies";
        v.grafana.folders[0].dashboards = ["platform/gone.json"];
      }),
      [
        'openbao.kvMount: expected a lowercase name (letters, digits, - and _); got "Secret Store"',
        'test/fixtures/app/bad-policies/broken.hcl: not an OpenBao policy: no path "…" { capabilities = […] } block',
        "test/fixtures/app/bad-policies/unclosed.hcl: has a { that is never closed",
        // CI's two policies are generated from the stack, so they are always known.
        "openbao.roles[0].policies[0]: policy external-secrets is neither in the policy folder nor in openbao.policies. Known: ci-apply, ci-preview, default",
        "grafana.folders[0].dashboards[0]: dashboard file app/dashboards/platform/gone.json does not exist. Export the dashboard's JSON model there, or drop it from the list",
      ],
    );
  });

  it("registers nothing when the app stack file is invalid", async () => {
    const recorder = new Recorder();
    recorder.behaviour.stackOutputs = {};
    const values = appValues();
    values.openbao.address = "openbao";
    await setupRun(values, {
      recorder,
      project: APP,
      stack: "staging",
      secrets: { openbaoToken: "t", grafanaAuth: "g" },
    });
    const { appLayer } = await import("../components/app");
    await assert.rejects(appLayer(), StackConfigError);
    await recorder.settled();
    assert.equal(recorder.resources.length, 0);
  });

  const BOOTSTRAP = "talos-platform-bootstrap";
  const bootstrapProblems = (change: (v: any) => void, secretKeys = new Set<string>()) => {
    const values: any = structuredClone(readStackFile("shared", "bootstrap", BOOTSTRAP));
    change(values);
    try {
      validateBootstrapConfig(values, "bootstrap/Pulumi.shared.yaml", secretKeys);
      return [];
    } catch (error) {
      if (error instanceof StackConfigError) return error.problems;
      throw error;
    }
  };

  it("refuses the bootstrap credential in plain text, and a misspelt key", () => {
    assert.deepEqual(
      bootstrapProblems((v) => {
        v.gcpCredentials = '{"type":"service_account"}';
        v.statebucket = v.stateBucket;
        delete v.stateBucket;
      }),
      [
        "talos-platform-bootstrap:statebucket: unknown key. Did you mean talos-platform-bootstrap:stateBucket?",
        "gcpCredentials: is a credential written in plain text in the stack file (value not shown). Store it encrypted: run `pulumi config set --secret gcpCredentials --stack shared --cwd bootstrap` and enter the value when asked, or leave it out and let the CLI supply it (docs/credentials.md)",
        "stateBucket: required",
      ],
    );
    assert.deepEqual(
      bootstrapProblems(() => undefined, new Set(["gcpCredentials"])),
      [],
    );
  });

  it("registers nothing when the bootstrap stack file is invalid", async () => {
    const recorder = new Recorder();
    await setupRun(
      { ...readStackFile("shared", "bootstrap", BOOTSTRAP), gcpCredentials: "{}" },
      { recorder, project: BOOTSTRAP, stack: "shared" },
    );
    const { bootstrapLayer } = await import("../components/bootstrap");
    assert.throws(() => bootstrapLayer(), StackConfigError);
    await recorder.settled();
    assert.equal(recorder.resources.length, 0);
  });
});
