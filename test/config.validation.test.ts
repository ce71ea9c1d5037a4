import { strict as assert } from "node:assert";
import { NodeSpec, StackConfigError, validatePlatformConfig } from "../components/config";
import { mixedCluster, problemsOf as validationProblems, proxmoxCluster } from "./fixtures";
import { runFoundation, StackValues } from "./harness";

type Mutation = (values: any) => void;

/** Runs validation on a changed copy of a valid config and returns the problems (none when valid). */
function problemsOf(mutate: Mutation, base: () => StackValues = proxmoxCluster): readonly string[] {
  return validationProblems(base, mutate);
}

describe("stack config validation", () => {
  it("accepts the valid fixtures", () => {
    assert.deepEqual(
      problemsOf(() => undefined),
      [],
    );
    assert.deepEqual(
      problemsOf(() => undefined, mixedCluster),
      [],
    );
  });

  const cases: [string, Mutation, string[]][] = [
    [
      "an even number of control planes",
      (v) => v.nodes.pop(),
      ["nodes: etcd needs an odd number of control planes; got 2. Use 1, 3 or 5"],
    ],
    [
      "no control plane",
      (v) => v.nodes.forEach((n: any) => (n.role = "worker")),
      ["nodes: a cluster needs at least one control plane; got 0. Use 1, 3 or 5"],
    ],
    [
      "no nodes",
      (v) => (v.nodes = []),
      ["nodes: the cluster has no nodes. List 1, 3 or 5 control planes and any workers"],
    ],
    [
      "two nodes sharing a name",
      (v) => (v.nodes[2].name = "cp-1"),
      ["nodes[2].name: name cp-1 is already used by nodes[0]. Node names must be unique"],
    ],
    [
      "two nodes sharing an IP",
      (v) => (v.nodes[1].network.addresses = ["192.0.2.11/24"]),
      [
        "nodes[1].network.addresses[0]: address 192.0.2.11 is already used by nodes[0].network.addresses[0]. Each address belongs to one node",
      ],
    ],
    [
      "a node using the VIP as its address",
      (v) => (v.nodes[0].network.addresses = ["192.0.2.10/24"]),
      [
        "nodes[0].network.addresses[0]: address 192.0.2.10 is already used by cluster.vip. Each address belongs to one node",
      ],
    ],
    [
      "two VMs sharing a VM ID",
      (v) => (v.nodes[2].proxmox.vmId = 101),
      ["nodes[2].proxmox.vmId: VM ID 101 is already used by nodes[0]. Choose an unused VM ID"],
    ],
    [
      "a Proxmox host that is not declared",
      (v) => (v.nodes[1].proxmox.host = "pve9"),
      [
        'nodes[1].proxmox.host: is not declared in proxmox.hosts; got "pve9". Declared: pve1, pve2, pve3',
      ],
    ],
    [
      "a Proxmox host declared twice",
      (v) => v.proxmox.hosts.push({ name: "pve1" }),
      ["proxmox.hosts[3].name: host pve1 is listed twice"],
    ],
    [
      "Proxmox nodes without Proxmox settings",
      (v) => delete v.proxmox,
      [
        "proxmox: required because nodes[0] runs on Proxmox. Add proxmox.endpoint and proxmox.hosts",
      ],
    ],
    [
      "a Kubernetes version the Talos version does not support",
      (v) => (v.cluster.kubernetesVersion = "1.37.0"),
      [
        'cluster.kubernetesVersion: Talos 1.13 does not support Kubernetes 1.37; got "1.37.0". Use Kubernetes 1.31 to 1.36, or another Talos version',
      ],
    ],
    [
      "a Talos release line this program does not know",
      (v) => (v.cluster.talosVersion = "v1.9.0"),
      [
        'cluster.talosVersion: unknown Talos release line 1.9; got "v1.9.0". This program knows Talos 1.10 to 1.14',
      ],
    ],
    [
      "a malformed version",
      (v) => (v.cluster.talosVersion = "1.13"),
      [
        'cluster.talosVersion: expected a version MAJOR.MINOR.PATCH such as v1.13.9 or 1.36.3; got "1.13"',
      ],
    ],
    [
      "a config contract newer than Talos",
      (v) => (v.cluster.configContract = "v1.14.0"),
      [
        'cluster.configContract: is newer than cluster.talosVersion; got "v1.14.0". Use 1.13 or older',
      ],
    ],
    [
      "a malformed CIDR",
      (v) => (v.nodes[0].network.addresses = ["192.0.2.300/24"]),
      [
        'nodes[0].network.addresses[0]: expected an address with its prefix length, such as 192.0.2.11/24 or 2001:db8::11/64; got "192.0.2.300/24"',
      ],
    ],
    [
      "an address without prefix",
      (v) => (v.nodes[0].network.addresses = ["192.0.2.11"]),
      [
        'nodes[0].network.addresses[0]: expected an address with its prefix length, such as 192.0.2.11/24 or 2001:db8::11/64; got "192.0.2.11"',
      ],
    ],
    [
      "a malformed IP",
      (v) => (v.cluster.vip = "192.0.2"),
      [
        'cluster.vip: expected an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10; got "192.0.2"',
      ],
    ],
    [
      "a misspelt key",
      (v) => (v.nodes[0].proxmox.vmid = 5),
      ["nodes[0].proxmox.vmid: unknown key. Did you mean vmId?"],
    ],
    [
      "an unknown platform",
      (v) => (v.nodes[0].platform = "vmware"),
      [
        'nodes[0].platform: expected platform to be one of proxmox, baremetal, oci, openstack; got "vmware"',
      ],
    ],
    [
      "an unknown role",
      (v) => (v.nodes[0].role = "master"),
      ['nodes[0].role: expected one of controlplane, worker; got "master"'],
    ],
    [
      "a gateway outside the node's subnet",
      (v) => (v.nodes[0].network.gateway = "198.51.100.1"),
      [
        'nodes[0].network.gateway: is outside every IPv4 subnet of the node; got "198.51.100.1". The node\'s addresses are 192.0.2.11/24',
      ],
    ],
    [
      "a VIP outside the control planes' subnets",
      (v) => (v.cluster.vip = "198.51.100.10"),
      [
        'cluster.vip: is not in the subnet of every control plane; got "198.51.100.10". A layer-2 VIP must share a subnet with every control plane; nodes[0] has 192.0.2.11/24; nodes[1] has 192.0.2.12/24; nodes[2] has 192.0.2.13/24',
      ],
    ],
    [
      "neither endpoint nor VIP",
      (v) => {
        delete v.cluster.endpoint;
        delete v.cluster.vip;
      },
      [
        "cluster.endpoint: required unless cluster.vip is set. Give the Kubernetes API's DNS name or IP (e.g. api.staging.example.net), or a vip",
      ],
    ],
    [
      "broken and outdated patches",
      (v) =>
        (v.cluster.patches = {
          all: ["machine: [", "machine:\n  network:\n    hostname: x\n", "- op: add"],
        }),
      [
        "cluster.patches.all[0]: is not valid YAML (Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 11)",
        "cluster.patches.all[1]: sets machine.network, which Talos 1.13 has deprecated (it is not in its configuration schema). Use HostnameConfig, LinkConfig, Layer2VIPConfig and ResolverConfig documents",
        'cluster.patches.all[2]: is a JSON 6902 patch list; this program takes strategic merge patches only, written as mappings; got [{"op":"add"}]',
      ],
    ],
    [
      "an inline node patch setting machine.time",
      (v) => (v.nodes[1].patches = [{ machine: { time: { servers: ["pool.ntp.org"] } } }]),
      [
        "nodes[1].patches[0]: sets machine.time, which Talos 1.13 has deprecated (it is not in its configuration schema). Use a TimeSyncConfig document",
      ],
    ],
    [
      "a control plane with too little memory",
      (v) => (v.nodes[0].proxmox.memory = 1024),
      ["nodes[0].proxmox.memory: a control plane needs at least 2048 MiB; got 1024"],
    ],
    [
      "a VM ID below 100",
      (v) => (v.nodes[0].proxmox.vmId = 5),
      ["nodes[0].proxmox.vmId: Proxmox VM IDs start at 100; got 5"],
    ],
    [
      "a VLAN out of range",
      (v) => (v.nodes[0].proxmox.vlan = 4095),
      ["nodes[0].proxmox.vlan: must be at most 4094; got 4095"],
    ],
    [
      "a missing cluster",
      (v) => delete v.cluster,
      ["cluster: required. See docs/configuration.md and Pulumi.staging.yaml"],
    ],
    [
      "a missing required field",
      (v) => delete v.nodes[0].proxmox.host,
      ["nodes[0].proxmox.host: required"],
    ],
    [
      "a schematic ID together with extensions",
      (v) => (v.cluster.imageFactory.schematicId = "3".repeat(64)),
      [
        "cluster.imageFactory.schematicId: cannot be combined with extensions or extraKernelArgs. Either name a schematic, or list extensions and let the program register the schematic",
      ],
    ],
    [
      "Proxmox nodes without a network",
      (v) => delete v.nodes[0].network,
      [
        "nodes[0].network: required for Proxmox nodes. Give network.addresses (the VM's static address, e.g. 192.0.2.11/24) and network.gateway",
      ],
    ],
  ];

  for (const [label, mutate, expected] of cases) {
    it(`rejects ${label}`, () => assert.deepEqual(problemsOf(mutate), expected));
  }

  const baremetalCases: [string, Mutation, string[]][] = [
    [
      "two spellings of one IPv6 address",
      (v) => (v.nodes[3].network.addresses = ["192.0.2.21/24", "2001:DB8:0::31/64"]),
      [
        "nodes[4].network.addresses[1]: address 2001:db8::31 is already used by nodes[3].network.addresses[1]. Each address belongs to one node",
        "nodes[4].baremetal.address: address 2001:db8::31 is already used by nodes[3].network.addresses[1]. Each address belongs to one node",
      ],
    ],
    [
      "two NICs sharing a MAC",
      (v) => (v.nodes[1].network.mac = "bc:24:11:00:00:21"),
      [
        "nodes[3].network.mac: MAC bc:24:11:00:00:21 is already used by nodes[1]. Each NIC needs its own MAC",
      ],
    ],
    [
      "a bare-metal network with neither MAC nor interface",
      (v) => delete v.nodes[4].network.interface,
      [
        "nodes[4].network: name the link to configure with mac or interface. mac selects the NIC by hardware address; interface takes a name such as enp1s0",
      ],
    ],
    [
      "a bare-metal address the node will not keep",
      (v) => (v.nodes[4].baremetal.address = "2001:db8::99"),
      [
        'nodes[4].baremetal.address: is not one of network.addresses, so the node would stop answering there once configured; got "2001:db8::99". List it in network.addresses, or use the static address the node will keep',
      ],
    ],
    [
      "a bare-metal control plane without a network when a VIP is set",
      (v) => {
        v.nodes[4].role = "controlplane";
        v.nodes[3].role = "controlplane";
        delete v.nodes[4].network;
      },
      [
        "nodes[4].network: required on control planes when cluster.vip is set (the VIP needs a link)",
        'nodes[4].baremetal.address: is not an IPv4 address; got "2001:db8::31". The first of cluster.network.serviceSubnets is IPv4: Talos gives each kubelet a node IP of that family, and health checks find nodes by it. Give network.addresses with one',
      ],
    ],
  ];
  for (const [label, mutate, expected] of baremetalCases) {
    it(`rejects ${label}`, () => assert.deepEqual(problemsOf(mutate, mixedCluster), expected));
  }

  it("reports every problem of every section at once", () => {
    const problems = problemsOf((v) => {
      v.nodes[0].proxmox.vmId = 5;
      v.nodes[1].name = "CP_2";
      v.cluster.kubernetesVersion = "1.20.0";
      v.nodes[2].proxmox.host = "pve7";
      v.proxmox.endpoint = "pve1";
    });
    assert.deepEqual(problems, [
      'proxmox.endpoint: expected an https:// URL of the Proxmox API; got "pve1"',
      "nodes[0].proxmox.vmId: Proxmox VM IDs start at 100; got 5",
      'nodes[1].name: expected a lowercase DNS label (letters, digits, hyphens; at most 63 characters); got "CP_2"',
      'cluster.kubernetesVersion: Talos 1.13 does not support Kubernetes 1.20; got "1.20.0". Use Kubernetes 1.31 to 1.36, or another Talos version',
    ]);
  });

  it("names the stack file and says nothing was created", () => {
    assert.throws(
      () => validatePlatformConfig({ ...proxmoxCluster(), nodes: [] }, "Pulumi.staging.yaml"),
      (error: Error) =>
        error.message.startsWith(
          "Pulumi.staging.yaml has 1 problem; nothing was created:\n  - nodes: ",
        ),
    );
  });

  it("registers zero resources when the config is invalid", async () => {
    const values = proxmoxCluster();
    (values.nodes as any[]).pop();
    await assert.rejects(runFoundation(values), StackConfigError);
    const { recorder } = await runFoundation(proxmoxCluster(), { preview: true });
    assert.ok(recorder.resources.length > 0, "the valid config does register resources");
  });
});

describe("stack config defaults", () => {
  const valid = () => validatePlatformConfig(mixedCluster(), "Pulumi.test.yaml");

  it("fills VM sizing and placement defaults", () => {
    const spec = validatePlatformConfig(proxmoxCluster(), "Pulumi.test.yaml");
    const node = spec.nodes[0];
    assert.equal(node.platform, "proxmox");
    if (node.platform !== "proxmox") return;
    assert.deepEqual(node.proxmox, {
      host: "pve1",
      vmId: 101,
      cores: 2,
      memory: 4096,
      diskSize: 32,
      datastore: "local-lvm",
      bridge: "vmbr0",
      vlan: 20,
      cpuType: "x86-64-v2-AES",
    });
    assert.equal(node.installDisk, "/dev/sda");
    assert.equal(node.talosAddress, "192.0.2.11");
  });

  it("derives a stable MAC for VMs without one and lowercases given ones", () => {
    const macOf = (node: NodeSpec) => (node.platform === "proxmox" ? node.network.mac : undefined);
    const first = macOf(validatePlatformConfig(proxmoxCluster(), "Pulumi.test.yaml").nodes[0]);
    const again = macOf(validatePlatformConfig(proxmoxCluster(), "Pulumi.test.yaml").nodes[0]);
    assert.match(first!, /^02(:[0-9a-f]{2}){5}$/);
    assert.equal(first, again);
    assert.equal(macOf(valid().nodes[3]), "bc:24:11:00:00:21");
  });

  it("normalizes versions and builds the endpoint URL", () => {
    const { cluster } = valid();
    assert.equal(cluster.talosVersion, "v1.13.9");
    assert.equal(cluster.kubernetesVersion, "1.36.3");
    assert.equal(cluster.configContract, "v1.13.9");
    assert.equal(cluster.endpointUrl, "https://api.demo.example.net:6443");
  });

  it("uses the VIP as endpoint when none is given, bracketing IPv6", () => {
    const values: any = proxmoxCluster();
    delete values.cluster.endpoint;
    assert.equal(
      validatePlatformConfig(values, "x").cluster.endpointUrl,
      "https://192.0.2.10:6443",
    );
    values.cluster.endpoint = "2001:db8::10";
    assert.equal(
      validatePlatformConfig(values, "x").cluster.endpointUrl,
      "https://[2001:db8::10]:6443",
    );
  });

  it("schedules workloads on control planes only when there are no workers", () => {
    assert.equal(
      validatePlatformConfig(proxmoxCluster(), "x").cluster.allowSchedulingOnControlPlanes,
      true,
    );
    assert.equal(valid().cluster.allowSchedulingOnControlPlanes, false);
  });

  it("protects control planes, checks health with a 10m timeout, stages changes that need a reboot and keeps flannel by default", () => {
    const { cluster } = valid();
    assert.equal(cluster.protectControlPlanes, true);
    assert.deepEqual(cluster.health, { enabled: true, timeout: "10m" });
    assert.equal(cluster.applyMode, "staged_if_needing_reboot");
    assert.equal(cluster.rollout.maxUnavailableWorkers, 1);
    assert.equal(cluster.network.cni, "flannel");
    assert.equal(cluster.network.kubeProxy, true);
  });

  it("resets bare-metal nodes on removal unless told not to", () => {
    const node = valid().nodes[4];
    assert.equal(node.platform === "baremetal" && node.baremetal.resetOnDestroy, true);
  });

  it("turns inline patches into YAML", () => {
    const values: any = proxmoxCluster();
    values.cluster.patches = { worker: [{ machine: { sysctls: { "vm.nr_hugepages": "64" } } }] };
    assert.deepEqual(validatePlatformConfig(values, "x").cluster.patches.worker, [
      'machine:\n  sysctls:\n    vm.nr_hugepages: "64"\n',
    ]);
  });
});
