// components/config/rules/schema.ts: what the sections' schemas refuse, in the project's own words.
import { strict as assert } from "node:assert";
import {
  cloudCluster,
  itRefuses,
  mixedCluster,
  problemsOf,
  proxmoxCluster,
  RuleCase,
  withServices,
} from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "a malformed version",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.talosVersion = "1.13"),
    problems: [
      'cluster.talosVersion: expected a version MAJOR.MINOR.PATCH such as v1.13.9 or 1.36.3; got "1.13"',
    ],
  },
  {
    rule: "a malformed CIDR",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].network.addresses = ["192.0.2.300/24"]),
    problems: [
      'nodes[0].network.addresses[0]: expected an address with its prefix length, such as 192.0.2.11/24 or 2001:db8::11/64; got "192.0.2.300/24"',
    ],
  },
  {
    rule: "an address without prefix",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].network.addresses = ["192.0.2.11"]),
    problems: [
      'nodes[0].network.addresses[0]: expected an address with its prefix length, such as 192.0.2.11/24 or 2001:db8::11/64; got "192.0.2.11"',
    ],
  },
  {
    rule: "a malformed IP",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.vip = "192.0.2"),
    problems: [
      'cluster.vip: expected an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10; got "192.0.2"',
    ],
  },
  {
    rule: "a Kubernetes version written as a YAML number",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.kubernetesVersion = 1.36),
    problems: [
      'cluster.kubernetesVersion: is a YAML number, not a version (unquoted, 1.30 reads as 1.3); quote it and give the patch release, e.g. "1.36.3"; got 1.36',
    ],
    valid: (v) => (v.cluster.kubernetesVersion = "1.36.3"),
  },
  {
    rule: "the nodes indented under cluster, with a top-level key's advice, not another section's key",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.nodes = v.nodes;
      delete v.nodes;
    },
    problems: [
      "cluster.nodes: is a top-level key, not a setting here. Move it out of cluster to the top of the stack file's config, as talos-platform:nodes",
      "nodes: required. See docs/configuration.md and Pulumi.staging.yaml",
    ],
  },
  {
    rule: "a misspelt cluster key, answered from the cluster's own keys",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.endpiont = "api.demo.example.net"),
    problems: ["cluster.endpiont: unknown key. Did you mean endpoint?"],
  },
  {
    rule: "a misspelt role next to a misspelt platform (both reported)",
    base: proxmoxCluster,
    broken: (v) => {
      v.nodes[0].role = "controlpane";
      v.nodes[0].platform = "proxmx";
    },
    problems: [
      'nodes[0].platform: expected platform to be one of proxmox, baremetal, oci, openstack; got "proxmx"',
      'nodes[0].role: expected one of controlplane, worker; got "controlpane"',
    ],
    valid: (v) => (v.nodes[0].role = "controlplane"),
  },
  {
    rule: "a misspelt key",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].proxmox.vmid = 5),
    problems: ["nodes[0].proxmox.vmid: unknown key. Did you mean vmId?"],
  },
  {
    rule: "an unknown platform",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].platform = "vmware"),
    problems: [
      'nodes[0].platform: expected platform to be one of proxmox, baremetal, oci, openstack; got "vmware"',
    ],
  },
  {
    rule: "an unknown role",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].role = "master"),
    problems: ['nodes[0].role: expected one of controlplane, worker; got "master"'],
  },
  {
    rule: "a VM ID below 100",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].proxmox.vmId = 5),
    problems: ["nodes[0].proxmox.vmId: Proxmox VM IDs start at 100; got 5"],
  },
  {
    rule: "a VLAN out of range",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].proxmox.vlan = 4095),
    problems: ["nodes[0].proxmox.vlan: must be at most 4094; got 4095"],
  },
  {
    rule: "a missing cluster",
    base: proxmoxCluster,
    broken: (v) => delete v.cluster,
    problems: ["cluster: required. See docs/configuration.md and Pulumi.staging.yaml"],
  },
  {
    rule: "a missing required field",
    base: proxmoxCluster,
    broken: (v) => delete v.nodes[0].proxmox.host,
    problems: ["nodes[0].proxmox.host: required"],
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
  {
    rule: "an OCI boot volume under 50 GB",
    base: cloudCluster,
    broken: (v) => (v.nodes[3].oci.bootVolumeGbs = 20),
    problems: ["nodes[3].oci.bootVolumeGbs: OCI boot volumes start at 50 GB; got 20"],
  },
  {
    rule: "an image given both ways",
    base: cloudCluster,
    broken: (v) => (v.oci.image = { id: "ocid1.image.oc1..x", objectStorageUri: "https://x" }),
    problems: [
      'oci.image: give either image.id (an image OCID) or image.objectStorageUri (a .qcow2 to import); got {"id":"ocid1.image.oc1..x","objectStorageUri":"https://x"}',
    ],
  },
  {
    rule: "a static network on a cloud node",
    base: cloudCluster,
    broken: (v) => (v.nodes[3].network = { addresses: ["198.51.100.21/24"] }),
    problems: ["nodes[3].network: is not a setting here. See docs/configuration.md"],
  },
  {
    rule: "an unknown connectivity",
    base: cloudCluster,
    broken: (v) => (v.cluster.network.connectivity = "vpn"),
    problems: ['cluster.network.connectivity: expected one of kubespan, routed; got "vpn"'],
  },
  {
    rule: "a Flux version that is not a release",
    base: withServices,
    broken: (v) => (v.flux.version = "latest"),
    problems: ['flux.version: expected a Flux release such as v2.7.3; got "latest"'],
    secrets: ["fluxDeployKey"],
  },
];

describe("rules: schema", () => {
  itRefuses(cases);

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

  itRefusesMutations({
    "a Proxmox endpoint over http": (v) => {
      if (!v.proxmox) return undefined;
      v.proxmox.endpoint = "http://pve1.example.net:8006/";
      return "proxmox.endpoint";
    },
  });
});
