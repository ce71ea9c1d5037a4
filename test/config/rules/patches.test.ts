// components/config/rules/patches.ts: Talos patches against the stack's Talos release.
import { strict as assert } from "node:assert";
import {
  itRefuses,
  mixedCluster,
  problemsOf,
  proxmoxCluster,
  RuleCase,
  warningsOf,
} from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "a HostnameConfig in the patches of every node",
    base: proxmoxCluster,
    broken: (v) =>
      (v.cluster.patches = {
        all: ["apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: node\n"],
      }),
    problems: [
      "cluster.patches.all[0]: in HostnameConfig, sets HostnameConfig hostname, which would give every node the same name. Each node's hostname comes from nodes[].name; to override one, put the HostnameConfig in that node's nodes[].patches",
    ],
    // One node's own patch may name it.
    valid: (v) =>
      (v.nodes[0].patches = ["apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: node\n"]),
  },
  {
    rule: "a v1alpha1 hostname in the patches of every control plane (deprecated since Talos 1.12)",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.talosVersion = "v1.12.4";
      v.cluster.kubernetesVersion = "1.35.2";
      v.cluster.patches = { controlplane: [{ machine: { network: { hostname: "cp" } } }] };
    },
    problems: [
      "cluster.patches.controlplane[0]: sets machine.network.hostname, which would give every controlplane node the same name. Each node's hostname comes from nodes[].name; to override one, put the HostnameConfig in that node's nodes[].patches",
      "cluster.patches.controlplane[0]: sets machine.network.hostname, which Talos 1.12 has deprecated (it is not in its configuration schema). Talos: use `HostnameConfig` instead.",
    ],
  },
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
    rule: "machine.network on Talos 1.13",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[1].patches = [{ machine: { network: { hostname: "cp-2" } } }]),
    problems: [
      "nodes[1].patches[0]: sets machine.network, which Talos 1.13 has deprecated (it is not in its configuration schema). Use HostnameConfig, LinkConfig, Layer2VIPConfig and ResolverConfig documents",
    ],
    valid: (v) =>
      (v.nodes[1].patches = ["apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: cp-2\n"]),
  },
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
  {
    rule: "broken and outdated patches",
    base: proxmoxCluster,
    broken: (v) =>
      (v.cluster.patches = {
        all: ["machine: [", "machine:\n  network:\n    hostname: x\n", "- op: add"],
      }),
    problems: [
      "cluster.patches.all[0]: is not valid YAML (Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 11)",
      "cluster.patches.all[1]: sets machine.network, which Talos 1.13 has deprecated (it is not in its configuration schema). Use HostnameConfig, LinkConfig, Layer2VIPConfig and ResolverConfig documents",
      'cluster.patches.all[2]: is a JSON 6902 patch list; this program takes strategic merge patches only, written as mappings; got [{"op":"add"}]',
    ],
  },
  {
    rule: "an inline node patch setting machine.time",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[1].patches = [{ machine: { time: { servers: ["pool.ntp.org"] } } }]),
    problems: [
      "nodes[1].patches[0]: sets machine.time, which Talos 1.13 has deprecated (it is not in its configuration schema). Use a TimeSyncConfig document",
    ],
  },
  {
    rule: "the same document twice in one patch, as Talos does",
    base: mixedCluster,
    broken: (v) =>
      (v.nodes[0].patches = [
        "apiVersion: v1alpha1\nkind: LinkConfig\nname: net0\nmtu: 1500\n---\napiVersion: v1alpha1\nkind: LinkConfig\nname: net0\nmtu: 9000\n",
      ]),
    problems: [
      'nodes[0].patches[0]: in document 2 (LinkConfig "net0"), repeats the LinkConfig "net0" document of the same patch. Talos refuses a patch with the same document twice; merge them',
    ],
  },
  {
    rule: "a patch by the config contract's release, not the newer Talos the nodes run",
    base: mixedCluster,
    broken: (v) => {
      v.cluster.talosVersion = "v1.14.1";
      v.cluster.kubernetesVersion = "1.37.0";
      v.cluster.configContract = "v1.13.9";
      // FilesystemTrimConfig is a Talos 1.14 document: the 1.13 generator cannot load it.
      v.cluster.patches = {
        all: ["apiVersion: v1alpha1\nkind: FilesystemTrimConfig\ninterval: 168h0m0s\n"],
      };
    },
    problems: [
      "cluster.patches.all[0]: in FilesystemTrimConfig, has kind FilesystemTrimConfig, which Talos 1.13 does not know. See the Talos 1.13 configuration reference for the document kinds",
    ],
    // What Talos 1.14 deprecated is still what a 1.13 contract generates.
    valid: (v) => {
      v.cluster.talosVersion = "v1.14.1";
      v.cluster.kubernetesVersion = "1.37.0";
      v.cluster.configContract = "v1.13.9";
      v.cluster.patches = { all: [{ machine: { nodeLabels: { a: "b" } } }] };
    },
  },
  {
    rule: "a patch by an older config contract's schema",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.configContract = "v1.12.4";
      // BlackholeRouteConfig came with Talos 1.13.
      v.nodes[1].patches = [
        "apiVersion: v1alpha1\nkind: BlackholeRouteConfig\nname: 192.0.2.128/25\n",
      ];
    },
    problems: [
      'nodes[1].patches[0]: in BlackholeRouteConfig "192.0.2.128/25", has kind BlackholeRouteConfig, which Talos 1.12 does not know. See the Talos 1.12 configuration reference for the document kinds',
    ],
    valid: (v) => {
      v.cluster.configContract = "v1.12.4";
      v.nodes[1].patches = ["apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: cp-2\n"];
    },
  },
];

describe("rules: patches", () => {
  itRefuses(cases);

  it("warns, without refusing, about what the newer Talos the nodes run has deprecated", () => {
    const upgraded = (v: any) => {
      v.cluster.talosVersion = "v1.14.1";
      v.cluster.kubernetesVersion = "1.37.0";
      v.cluster.configContract = "v1.13.9";
      v.cluster.patches = {
        all: [{ machine: { nodeLabels: { a: "b" }, sysctls: { "vm.swappiness": "1" } } }],
      };
    };
    assert.deepEqual(problemsOf(mixedCluster, upgraded), []);
    assert.deepEqual(warningsOf(mixedCluster, upgraded), [
      "cluster.patches.all[0]: sets machine.nodeLabels, which Talos 1.14 (cluster.talosVersion) has deprecated; it is valid for config contract 1.13, which the configs are generated for. Before the contract moves to 1.14: Talos 1.14: use `KubeNodeConfig` instead.",
      "cluster.patches.all[0]: sets machine.sysctls, which Talos 1.14 (cluster.talosVersion) has deprecated; it is valid for config contract 1.13, which the configs are generated for. Before the contract moves to 1.14: Talos 1.14: Use 'SysctlConfig' instead.",
    ]);
    // Without a newer Talos there is nothing to warn about.
    assert.deepEqual(
      warningsOf(mixedCluster, (v) => {
        v.cluster.patches = { all: [{ machine: { nodeLabels: { a: "b" } } }] };
      }),
      [],
    );
  });

  it("validates the repository's prod stack after upgrade talos bumps it to Talos 1.14", () => {
    // Pulumi.prod.yaml pins configContract v1.13.9; its patches are 1.13 machine config.
    assert.deepEqual(
      problemsOf(mixedCluster, (v) => {
        v.cluster.talosVersion = "v1.14.1";
        v.cluster.kubernetesVersion = "1.36.3";
        v.cluster.configContract = "v1.13.9";
        v.cluster.patches = { all: [{ machine: { kubelet: { extraArgs: { v: "2" } } } }] };
      }),
      [],
    );
  });

  it("takes $patch: delete directives, which Talos applies before decoding", () => {
    assert.deepEqual(
      problemsOf(mixedCluster, (v) => {
        v.cluster.patches = {
          all: [
            { machine: { network: { $patch: "delete" } } },
            "machine:\n  certSANs:\n    - $patch: delete\n      value: x\n",
          ],
        };
      }),
      [],
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

  itRefusesMutations({
    "a patch with an unknown key": (v) => {
      v.nodes[0].patches = [{ machine: { certSANz: ["x"] } }];
      return "nodes[0].patches[0]";
    },
    "a patch of an unknown kind": (v) => {
      v.nodes.at(-1).patches = ["apiVersion: v1alpha1\nkind: BogusConfig\n"];
      return `nodes[${v.nodes.length - 1}].patches[0]`;
    },
    "a patch setting the cluster secret": (v) => {
      const all = v.cluster.patches?.all ?? [];
      v.cluster.patches = { all: [...all, { cluster: { secret: "c2VjcmV0" } }] };
      return `cluster.patches.all[${all.length}]`;
    },
  });
});
