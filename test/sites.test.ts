// Clusters over several sites as registered: what crosses the firewalls the program manages, KubeSpan,
// resolvers and NTP per site and node; and the cloud details found in the same review (OCI image and
// VNIC, OpenStack data volume, architecture-specific extensions, OpenBao's unseal identity). What a
// stack file may ask for: test/config/rules/ (sites, images, services).
import { strict as assert } from "node:assert";
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { parse, parseAllDocuments } from "yaml";
import { validatePlatformConfig } from "../components/config/validate";
import { jwksFromSigningKey, keyId } from "../components/gcp/jwks";
import { imageDisplayName } from "../components/nodes/oci/platform";
import { clone, cloudCluster, proxmoxCluster, validTalos113, withServices } from "./fixtures";
import { isSecret, readStackFile, runFoundation, STACK_SECRETS, StackValues } from "./harness";
import type { RecordedResource } from "./mocks";

const T = {
  osRule: "openstack:networking/secGroupRule:SecGroupRule",
  osGroup: "openstack:networking/secGroup:SecGroup",
  osInstance: "openstack:compute/instance:Instance",
  nsg: "oci:Core/networkSecurityGroup:NetworkSecurityGroup",
  nsgRule: "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule",
  ociInstance: "oci:Core/instance:Instance",
  ociImage: "oci:Core/image:Image",
  capabilities: "oci:Core/computeImageCapabilitySchema:ComputeImageCapabilitySchema",
  schematic: "talos:imageFactory/schematic:Schematic",
  urls: "talos:imageFactory/getUrls:getUrls",
  getConfiguration: "talos:machine/getConfiguration:getConfiguration",
  vm: "proxmoxve:index/vmLegacy:VmLegacy",
  record: "gcp:dns/recordSet:RecordSet",
};

const validateTalos = validTalos113();

async function run(base: () => StackValues, change: (v: any) => void, secrets = {}) {
  const values = clone(base());
  change(values);
  return runFoundation(values, { secrets });
}

/** Every document a node's config was generated with, parsed. */
function documentsOf(recorder: { invokesOf: (t: string) => any[] }, hostname: string): any[] {
  const call = recorder
    .invokesOf(T.getConfiguration)
    .find((i) => i.inputs.configPatches.some((p: string) => p.includes(`hostname: ${hostname}\n`)));
  return (call.inputs.configPatches as string[]).flatMap((p) =>
    parseAllDocuments(p).map((d) => d.toJS()),
  );
}

/** [ethertype, protocol, port, group or prefix] of each rule of one security group. */
function rulesOf(recorder: { ofType: (t: string) => RecordedResource[] }, group: string) {
  const groups = new Map(recorder.ofType(T.osGroup).map((g) => [`secgroup-${g.name}`, g.name]));
  const id = `secgroup-${group}`;
  return recorder
    .ofType(T.osRule)
    .filter((r) => r.inputs.securityGroupId === id)
    .map((r) => [
      r.inputs.ethertype,
      r.inputs.protocol,
      r.inputs.portRangeMin ?? "-",
      r.inputs.remoteIpPrefix ?? groups.get(r.inputs.remoteGroupId),
    ])
    .sort();
}

describe("firewalls the program manages (OpenStack security groups)", () => {
  it("opens the control-plane ports only on control planes, and only the workstation's API ports to apiAllowedCidrs", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.nodes = v.nodes.filter((n: any) => n.platform === "openstack");
      v.nodes[0].role = "controlplane";
      delete v.cluster.vip;
      delete v.proxmox;
      delete v.oci;
      delete v.cluster.network.connectivity;
      v.openstack.apiAllowedCidrs = ["198.51.100.0/24"];
    });
    assert.deepEqual(rulesOf(recorder, "demo-controlplanes"), [
      ["IPv4", "tcp", 2379, "demo-controlplanes"],
      ["IPv4", "tcp", 50001, "demo-nodes"],
      ["IPv4", "tcp", 6443, "198.51.100.0/24"],
      ["IPv4", "tcp", 6443, "demo-nodes"],
      ["IPv6", "tcp", 2379, "demo-controlplanes"],
      ["IPv6", "tcp", 50001, "demo-nodes"],
      ["IPv6", "tcp", 6443, "demo-nodes"],
    ]);
    assert.deepEqual(rulesOf(recorder, "demo-nodes"), [
      // Path MTU discovery from anywhere (neighbour discovery: Neutron lets it in itself).
      ["IPv4", "icmp", 3, "0.0.0.0/0"],
      ["IPv4", "tcp", 10250, "demo-controlplanes"],
      ["IPv4", "tcp", 50000, "198.51.100.0/24"],
      ["IPv4", "tcp", 50000, "demo-controlplanes"],
      ["IPv4", "udp", 4789, "demo-nodes"],
      ["IPv6", "ipv6-icmp", 2, "::/0"],
      ["IPv6", "tcp", 10250, "demo-controlplanes"],
      ["IPv6", "tcp", 50000, "demo-controlplanes"],
      ["IPv6", "udp", 4789, "demo-nodes"],
    ]);
    const icmp = recorder.ofType(T.osRule).filter((r) => r.inputs.protocol.includes("icmp"));
    assert.deepEqual(
      icmp.map((r) => [r.inputs.protocol, r.inputs.portRangeMin, r.inputs.portRangeMax]).sort(),
      [
        ["icmp", 3, 4],
        ["ipv6-icmp", 2, undefined],
      ],
      "fragmentation needed (type 3 code 4), packet too big (type 2, any code)",
    );
    const etcd = recorder.ofType(T.osRule).find((r) => r.inputs.portRangeMin === 2379)!;
    assert.equal(etcd.inputs.portRangeMax, 2380);
    const ports = (node: string) => recorder.named(`demo-${node}-port`).inputs.securityGroupIds;
    assert.deepEqual(ports("os-1"), ["secgroup-demo-nodes", "secgroup-demo-controlplanes"]);
    assert.deepEqual(ports("os-2"), ["secgroup-demo-nodes"]);
  });

  it("opens Cilium's ports instead of flannel's, VXLAN over Cilium's default IPv4 underlay only", async () => {
    const { recorder } = await run(cloudCluster, (v) => (v.cluster.network.cni = "cilium"));
    const cni = rulesOf(recorder, "demo-nodes").filter((r) => r[3] === "demo-nodes");
    assert.deepEqual(cni, [
      ["IPv4", "icmp", 8, "demo-nodes"],
      ["IPv4", "tcp", 4240, "demo-nodes"],
      ["IPv4", "tcp", 4244, "demo-nodes"],
      ["IPv4", "udp", 8472, "demo-nodes"],
      ["IPv6", "ipv6-icmp", 128, "demo-nodes"],
      ["IPv6", "tcp", 4240, "demo-nodes"],
      ["IPv6", "tcp", 4244, "demo-nodes"],
    ]);
    const vxlan = rulesOf(recorder, "demo-nodes").filter((r) => r[2] === 8472);
    assert.deepEqual(
      vxlan,
      [
        ["IPv4", "udp", 8472, "198.51.100.21/32"],
        ["IPv4", "udp", 8472, "198.51.100.22/32"],
        ["IPv4", "udp", 8472, "198.51.100.23/32"],
        ["IPv4", "udp", 8472, "192.0.2.11/32"],
        ["IPv4", "udp", 8472, "192.0.2.12/32"],
        ["IPv4", "udp", 8472, "192.0.2.13/32"],
        ["IPv4", "udp", 8472, "demo-nodes"],
      ].sort(),
    );
  });

  it("opens Cilium's VXLAN from the sites' IPv6 prefixes only with an IPv6 underlay", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { underlayProtocol: "ipv6" };
      v.cluster.sites = {
        proxmox: { cidrs: ["2001:db8:100::/48", "192.0.2.0/24"] },
        "oci-eu-frankfurt-1": { cidrs: ["2001:db8:400::/56"] },
        openstack: { cidrs: ["2001:db8:500::/56"] },
      };
    });
    const vxlan = rulesOf(recorder, "demo-nodes").filter((r) => r[2] === 8472);
    assert.deepEqual(vxlan, [
      ["IPv6", "udp", 8472, "2001:db8:100::/48"],
      ["IPv6", "udp", 8472, "2001:db8:400::/56"],
      ["IPv6", "udp", 8472, "demo-nodes"],
    ]);
    const rules = rulesOf(recorder, "demo-nodes").map((r) => r.join());
    assert.ok(rules.includes("IPv4,tcp,10250,192.0.2.0/24"), "other flows keep both families");
  });

  it("with KubeSpan opens its WireGuard port to every peer and nothing else to other sites", async () => {
    const { recorder } = await run(
      cloudCluster,
      (v) => (v.cluster.network.connectivity = "kubespan"),
    );
    const rules = rulesOf(recorder, "demo-nodes");
    assert.ok(rules.some((r) => r.join() === "IPv4,udp,51820,0.0.0.0/0"));
    assert.ok(rules.some((r) => r.join() === "IPv6,udp,51820,::/0"));
    const remote = rules.filter(
      (r) => typeof r[3] === "string" && /\d/.test(r[3]) && !["0.0.0.0/0", "::/0"].includes(r[3]),
    );
    assert.deepEqual(remote, [], "no other site's addresses: their traffic is inside WireGuard");
  });
});

/** [protocol, port or ICMP type, NSG or prefix] of each rule of one OCI network security group. */
function nsgRulesOf(recorder: { ofType: (t: string) => RecordedResource[] }, group: string) {
  const groups = new Map(
    recorder.ofType(T.nsg).map((g) => [`ocid1.networksecuritygroup.oc1..${g.name}`, g.name]),
  );
  return recorder
    .ofType(T.nsgRule)
    .filter((r) => groups.get(r.inputs.networkSecurityGroupId) === `${group}-nsg`)
    .map((r) => [
      r.inputs.protocol,
      r.inputs.tcpOptions?.destinationPortRange.min ??
        r.inputs.udpOptions?.destinationPortRange.min ??
        r.inputs.icmpOptions?.type,
      r.inputs.sourceType === "NETWORK_SECURITY_GROUP"
        ? groups.get(r.inputs.source)
        : r.inputs.source,
    ])
    .sort();
}

describe("firewalls the program manages (OCI network security groups)", () => {
  it("puts OCI workers in the cluster's nodes NSG, in the subnet's VCN, with the flows of the shared table", async () => {
    const { recorder } = await run(cloudCluster, () => undefined);
    assert.deepEqual(
      recorder.ofType(T.nsg).map((g) => [g.name, g.inputs.vcnId, g.inputs.displayName]),
      [["demo-nodes-nsg", "ocid1.vcn.oc1.eu-frankfurt-1.example", "demo-nodes"]],
      "no control plane on OCI: no control-plane NSG",
    );
    assert.deepEqual(
      recorder.invokesOf("oci:Core/getSubnet:getSubnet").map((i) => i.inputs.subnetId),
      ["ocid1.subnet.oc1.eu-frankfurt-1.example"],
    );
    const cps = ["192.0.2.11/32", "192.0.2.12/32", "192.0.2.13/32"];
    const openstackNodes = ["203.0.113.21/32", "203.0.113.22/32"];
    assert.deepEqual(
      nsgRulesOf(recorder, "demo-nodes"),
      [
        // Talos API and kubelet from the control planes (at the Proxmox site, routed).
        ...cps.map((p) => ["6", 50000, p]),
        ...cps.map((p) => ["6", 10250, p]),
        // flannel from the NSG itself and every other site's nodes.
        ["17", 4789, "demo-nodes-nsg"],
        ...[...cps, ...openstackNodes].map((p) => ["17", 4789, p]),
        // Path MTU discovery and IPv6 neighbour discovery from anywhere.
        ["1", 3, "0.0.0.0/0"],
        ["58", 2, "::/0"],
        ...[133, 134, 135, 136].map((type) => ["58", type, "::/0"]),
        // The workstation's Talos API (oci.apiAllowedCidrs' default).
        ["6", 50000, "0.0.0.0/0"],
        ["6", 50000, "::/0"],
      ].sort(),
    );
    for (const rule of recorder.ofType(T.nsgRule)) {
      assert.equal(rule.inputs.direction, "INGRESS");
      assert.equal(rule.inputs.stateless, false);
      assert.ok(["CIDR_BLOCK", "NETWORK_SECURITY_GROUP"].includes(rule.inputs.sourceType));
    }
    const pmtu = recorder.ofType(T.nsgRule).find((r) => r.inputs.protocol === "1")!;
    assert.deepEqual(pmtu.inputs.icmpOptions, { type: 3, code: 4 });
    for (const node of ["oci-1", "oci-2", "oci-3"]) {
      assert.deepEqual(recorder.named(`demo-${node}-instance`).inputs.createVnicDetails.nsgIds, [
        "ocid1.networksecuritygroup.oc1..demo-nodes-nsg",
      ]);
    }
  });

  it("opens the control-plane ports on a control-plane NSG, and the APIs only to oci.apiAllowedCidrs", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.nodes = v.nodes.filter((n: any) => n.platform === "oci");
      v.nodes[0].role = "controlplane";
      v.nodes[0].oci.nsgIds = ["ocid1.networksecuritygroup.oc1..mine"];
      delete v.cluster.vip;
      delete v.cluster.endpoint;
      v.cluster.endpoint = "api.demo.example.net";
      delete v.proxmox;
      delete v.openstack;
      delete v.cluster.network.connectivity;
      v.oci.apiAllowedCidrs = ["198.51.100.0/24"];
    });
    assert.deepEqual(nsgRulesOf(recorder, "demo-controlplanes"), [
      ["6", 2379, "demo-controlplanes-nsg"],
      ["6", 50001, "demo-nodes-nsg"],
      ["6", 6443, "198.51.100.0/24"],
      ["6", 6443, "demo-nodes-nsg"],
    ]);
    const etcd = recorder
      .ofType(T.nsgRule)
      .find((r) => r.inputs.tcpOptions?.destinationPortRange.min === 2379)!;
    assert.deepEqual(etcd.inputs.tcpOptions, { destinationPortRange: { min: 2379, max: 2380 } });
    const workstation = nsgRulesOf(recorder, "demo-nodes").filter(
      (r) => r[2] === "198.51.100.0/24",
    );
    assert.deepEqual(workstation, [["6", 50000, "198.51.100.0/24"]]);
    const vnic = (node: string) => recorder.named(`demo-${node}-instance`).inputs.createVnicDetails;
    assert.deepEqual(vnic("oci-1").nsgIds, [
      "ocid1.networksecuritygroup.oc1..demo-nodes-nsg",
      "ocid1.networksecuritygroup.oc1..demo-controlplanes-nsg",
      "ocid1.networksecuritygroup.oc1..mine",
    ]);
    assert.deepEqual(vnic("oci-2").nsgIds, ["ocid1.networksecuritygroup.oc1..demo-nodes-nsg"]);
  });

  it("manages no NSG with oci.manageNsgs: false, and attaches only the listed ones", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.oci.manageNsgs = false;
      v.oci.nsgIds = ["ocid1.networksecuritygroup.oc1..mine"];
    });
    assert.equal(recorder.ofType(T.nsg).length + recorder.ofType(T.nsgRule).length, 0);
    assert.equal(recorder.invokesOf("oci:Core/getSubnet:getSubnet").length, 0);
    assert.deepEqual(recorder.named("demo-oci-1-instance").inputs.createVnicDetails.nsgIds, [
      "ocid1.networksecuritygroup.oc1..mine",
    ]);
  });
});

describe("KubeSpan", () => {
  it("enables KubeSpan and cluster discovery on every node, in documents Talos 1.13 accepts", async () => {
    const { recorder } = await run(
      cloudCluster,
      (v) => (v.cluster.network.connectivity = "kubespan"),
    );
    for (const node of ["cp-1", "oci-1", "os-2"]) {
      const documents = documentsOf(recorder, node);
      const kubespan = documents.find((d) => d?.kind === "KubeSpanConfig");
      assert.deepEqual(kubespan, { apiVersion: "v1alpha1", kind: "KubeSpanConfig", enabled: true });
      assert.ok(validateTalos(kubespan), JSON.stringify(validateTalos.errors));
      assert.ok(documents.some((d) => d?.cluster?.discovery?.enabled === true));
    }
  });

  it("is not configured for routed or single-site clusters", async () => {
    const { recorder } = await run(cloudCluster, () => undefined);
    assert.equal(
      documentsOf(recorder, "cp-1").some((d) => d?.kind === "KubeSpanConfig"),
      false,
    );
  });
});

describe("resolvers and NTP per site and node", () => {
  it("gives on-prem nodes the cluster's resolvers, and cloud nodes their platform's", async () => {
    const { recorder } = await run(cloudCluster, () => undefined);
    const resolvers = (node: string) =>
      documentsOf(recorder, node).find((d) => d?.kind === "ResolverConfig");
    assert.deepEqual(resolvers("cp-1").nameservers, [{ address: "192.0.2.1" }]);
    assert.equal(resolvers("oci-1"), undefined);
    assert.equal(resolvers("os-1"), undefined);
  });

  it("lets a site, then a node, override them, and cloud-init follows the node's", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.cluster.sites = {
        "oci-eu-frankfurt-1": { nameservers: ["198.51.100.53"], ntpServers: ["169.254.169.254"] },
      };
      v.nodes[1].nameservers = ["192.0.2.53"];
    });
    const doc = (node: string, kind: string) =>
      documentsOf(recorder, node).find((d) => d?.kind === kind);
    assert.deepEqual(doc("oci-2", "ResolverConfig").nameservers, [{ address: "198.51.100.53" }]);
    assert.deepEqual(doc("oci-2", "TimeSyncConfig").ntp.servers, ["169.254.169.254"]);
    assert.deepEqual(doc("cp-2", "ResolverConfig").nameservers, [{ address: "192.0.2.53" }]);
    assert.deepEqual(doc("cp-1", "ResolverConfig").nameservers, [{ address: "192.0.2.1" }]);
    assert.deepEqual(recorder.named("demo-cp-2-vm").inputs.initialization.dns, {
      servers: ["192.0.2.53"],
    });
    assert.equal(doc("os-1", "ResolverConfig"), undefined);
  });
});

describe("OCI", () => {
  it("names the imported image after its source object, not the cluster's Talos version", async () => {
    const { recorder } = await run(cloudCluster, (v) => (v.cluster.talosVersion = "v1.13.10"));
    assert.equal(recorder.ofType(T.ociImage)[0].inputs.displayName, "oracle-arm64");
    assert.equal(
      imageDisplayName(
        "https://objectstorage.eu-frankfurt-1.oraclecloud.com/p/x/n/ns/b/b/o/talos-v1.13.9-oracle-arm64.qcow2",
        "arm64",
      ),
      "talos-v1.13.9-oracle-arm64",
    );
  });

  it("states the image's firmware and launch mode instead of taking the tenancy's defaults", async () => {
    const { recorder } = await run(cloudCluster, () => undefined);
    const [capabilities] = recorder.ofType(T.capabilities);
    assert.equal(capabilities.inputs.imageId, "ocid1.image.oc1..demo-talos-image-oci");
    assert.equal(capabilities.inputs.computeGlobalImageCapabilitySchemaVersionName, "2024-03-01");
    const data = capabilities.inputs.schemaData;
    assert.deepEqual(JSON.parse(data["Compute.Firmware"]), {
      descriptorType: "enumstring",
      source: "IMAGE",
      defaultValue: "UEFI_64",
      values: ["UEFI_64"],
    });
    assert.equal(JSON.parse(data["Compute.LaunchMode"]).defaultValue, "PARAVIRTUALIZED");
    assert.equal(recorder.ofType(T.ociImage)[0].inputs.launchMode, "PARAVIRTUALIZED");
  });

  it("skips the VNIC's hostname label when the subnet has no DNS, and fixes an IPv6 address", async () => {
    const { recorder, resolved } = await run(cloudCluster, (v) => {
      v.oci.hostnameLabel = false;
      v.nodes[3].oci.ipv6Address = "2001:db8:400::41";
    });
    const vnic = recorder.named("demo-oci-1-instance").inputs.createVnicDetails;
    assert.equal(vnic.hostnameLabel, undefined);
    assert.equal(vnic.assignIpv6ip, true);
    assert.deepEqual(vnic.ipv6addressIpv6subnetCidrPairDetails, [
      { ipv6address: "2001:db8:400::41" },
    ]);
    assert.equal(recorder.named("demo-oci-1-config").inputs.node, "2001:db8:400::41");
    assert.equal(
      resolved.kubeletAddresses["oci-1"],
      "198.51.100.21",
      "IPv4 services: IPv4 kubelet",
    );
  });

  it("builds one schematic per architecture, keeping x86 microcode out of the arm64 image", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.cluster.imageFactory.architectureExtensions = { amd64: ["siderolabs/intel-ucode"] };
    });
    const schematics = new Map(
      recorder.ofType(T.schematic).map((s) => [s.name, parse(s.inputs.schematic)]),
    );
    const extensions = (name: string) =>
      schematics.get(name)?.customization.systemExtensions.officialExtensions;
    assert.deepEqual(extensions("demo-schematic-oci-arm64"), undefined);
    assert.deepEqual(extensions("demo-schematic-proxmox"), [
      "siderolabs/intel-ucode",
      "siderolabs/qemu-guest-agent",
    ]);
    assert.deepEqual(extensions("demo-schematic-openstack"), ["siderolabs/intel-ucode"]);
    const oracle = recorder.invokesOf(T.urls).find((u) => u.inputs.platform === "oracle")!;
    assert.equal(oracle.inputs.schematicId.length, 64);
  });
});

describe("OpenStack data volume", () => {
  it("makes the data volume the Talos user volume `data`, in a document Talos 1.13 accepts", async () => {
    const { recorder } = await run(
      cloudCluster,
      (v) => (v.nodes[6].openstack.dataVolumeSize = 100),
    );
    const instance = recorder.named("demo-os-1-instance").inputs;
    assert.equal(instance.blockDevices.length, 2);
    assert.equal(instance.blockDevices[1].uuid, "volume-demo-os-1-data");
    const volume = parseAllDocuments(instance.userData)
      .map((d) => d.toJS())
      .find((d) => d?.kind === "UserVolumeConfig");
    assert.deepEqual(volume, {
      apiVersion: "v1alpha1",
      kind: "UserVolumeConfig",
      name: "data",
      volumeType: "disk",
      // The Cinder volume itself, by the serial Nova gives it (its id; virtio-blk keeps 20
      // characters): never the config drive or an ephemeral disk, which !system_disk also matched.
      provisioning: {
        diskSelector: {
          match: 'disk.serial == "volume-demo-os-1-dat" || disk.serial == "volume-demo-os-1-data"',
        },
      },
    });
    assert.ok(validateTalos(volume), JSON.stringify(validateTalos.errors));
    const other = parseAllDocuments(recorder.named("demo-os-2-instance").inputs.userData).map((d) =>
      d.toJS(),
    );
    assert.equal(
      other.some((d) => d?.kind === "UserVolumeConfig"),
      false,
    );
  });
});

describe("OpenStack volume availability zone", () => {
  const zones = (recorder: { named: (n: string) => RecordedResource }) =>
    ["os-1-boot", "os-1-data", "os-1-instance", "os-2-boot", "os-2-instance"].map(
      (n) => recorder.named(`demo-${n}`).inputs.availabilityZone,
    );

  it("puts the volumes in their instance's Nova zone by default, without a pinned host", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.nodes[6].openstack.dataVolumeSize = 100;
      v.nodes[7].openstack.availabilityZone = "az2:compute-7";
    });
    assert.deepEqual(zones(recorder), ["az1", "az1", "az1", "az2", "az2:compute-7"]);
  });

  it("puts them in openstack.volumeAvailabilityZone when the stack names Cinder's zone", async () => {
    const { recorder } = await run(cloudCluster, (v) => {
      v.nodes[6].openstack.dataVolumeSize = 100;
      v.openstack.volumeAvailabilityZone = "nova";
    });
    assert.deepEqual(zones(recorder), ["nova", "nova", "az1", "nova", "az2"]);
  });
});

describe("OpenBao's unseal identity", () => {
  const unsealWith =
    (kind: string, extra: Record<string, unknown> = {}) =>
    (v: any) => {
      v.openbao = { credentials: kind, ...extra };
    };
  const deployKey = { fluxDeployKey: STACK_SECRETS.fluxDeployKey };

  it("trusts the cluster's service-account tokens through Workload Identity Federation, with no key", async () => {
    const { recorder, resolved } = await run(
      withServices,
      unsealWith("workloadIdentity"),
      deployKey,
    );
    assert.equal(recorder.ofType("gcp:serviceaccount/key:Key").length, 0);
    assert.equal(recorder.ofType("gcp:serviceaccount/account:Account").length, 0);
    const provider = recorder.ofType(
      "gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider",
    )[0].inputs;
    assert.equal(provider.oidc.issuerUri, "https://api.demo.example.net:6443");
    assert.equal(
      provider.attributeCondition,
      'assertion.sub == "system:serviceaccount:openbao:openbao"',
    );
    const jwks = JSON.parse(provider.oidc.jwksJson);
    assert.deepEqual(Object.keys(jwks.keys[0]).sort(), [
      "alg",
      "crv",
      "kid",
      "kty",
      "use",
      "x",
      "y",
    ]);
    assert.equal(jwks.keys[0].alg, "ES256");
    assert.doesNotMatch(provider.oidc.jwksJson, /FAKE-SECRET|"d"/, "only the public half");
    const members = recorder
      .ofType("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
      .map((m) => [m.inputs.role, m.inputs.member]);
    const principal =
      "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/demo-openbao/subject/system:serviceaccount:openbao:openbao";
    assert.deepEqual(members.sort(), [
      ["roles/cloudkms.cryptoKeyEncrypterDecrypter", principal],
      ["roles/cloudkms.viewer", principal],
    ]);
    const credentials = JSON.parse(resolved.openbao.credentials);
    assert.equal(credentials.type, "external_account");
    assert.equal(
      credentials.audience,
      "//iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/demo-openbao/providers/demo-cluster",
    );
    assert.equal(credentials.credential_source.file, "/var/run/secrets/openbao/gcp/token");
  });

  it("names the pool openbao.workloadIdentityPoolId where the stack gives one (a soft-deleted ID stays taken)", async () => {
    const { recorder, resolved } = await run(
      withServices,
      unsealWith("workloadIdentity", { workloadIdentityPoolId: "demo-openbao-2" }),
      deployKey,
    );
    const [pool] = recorder.ofType("gcp:iam/workloadIdentityPool:WorkloadIdentityPool");
    assert.equal(pool.inputs.workloadIdentityPoolId, "demo-openbao-2");
    assert.match(
      JSON.parse(resolved.openbao.credentials).audience,
      /workloadIdentityPools\/demo-openbao-2\/providers\/demo-cluster$/,
    );
  });

  it("derives the key ID Kubernetes puts in its tokens", () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    // As the Talos provider hands machine secrets out: base64 of the PEM.
    const jwks = JSON.parse(jwksFromSigningKey(Buffer.from(pem).toString("base64")));
    assert.equal(jwks.keys[0].alg, "RS256");
    assert.equal(jwks.keys[0].kid, keyId(createPublicKey(privateKey)));
    assert.match(jwks.keys[0].kid, /^[A-Za-z0-9_-]{43}$/);
  });

  it("grants the roles to an existing key's account and hands that key on", async () => {
    const key = JSON.stringify({ type: "service_account", private_key: "FAKE-SECRET-existing" });
    const { recorder, resolved, outputs } = await run(
      withServices,
      unsealWith("existingKey", {
        serviceAccountEmail: "bao@example-homelab.iam.gserviceaccount.com",
      }),
      { ...deployKey, gcpUnsealCredentials: key },
    );
    assert.equal(recorder.ofType("gcp:serviceaccount/key:Key").length, 0);
    const members = recorder.ofType("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember");
    assert.ok(
      members.every(
        (m) => m.inputs.member === "serviceAccount:bao@example-homelab.iam.gserviceaccount.com",
      ),
    );
    assert.equal(resolved.openbao.credentials, key);
    assert.equal(await isSecret(outputs.openbao!.credentials), true);
  });
});

describe("prod over four sites", () => {
  it("routes between sites with Cilium, IPv6 first, no VIP, and the API name on the control planes' IPv6", async () => {
    const { recorder, resolved } = await runFoundation(readStackFile("prod"), {
      stack: "prod",
      secrets: STACK_SECRETS,
    });
    const spec = validatePlatformConfig(
      { ...readStackFile("prod"), secretKeys: new Set(["fluxDeployKey"]) },
      "prod",
    );
    assert.equal(spec.cluster.vip, undefined);
    assert.equal(spec.cluster.network.connectivity, "routed");
    assert.equal(spec.cluster.network.cni, "cilium");
    assert.deepEqual(Object.keys(spec.cluster.sites).sort(), [
      "edge",
      "home",
      "oci-eu-frankfurt-1",
      "openstack-regionone",
    ]);
    const aaaa = recorder
      .ofType(T.record)
      .find((r) => r.inputs.name === "api.prod.example.net." && r.inputs.type === "AAAA")!;
    assert.deepEqual(aaaa.inputs.rrdatas, [
      "2001:db8:100::11",
      "2001:db8:100::12",
      "2001:db8:100::13",
    ]);
    // Every node is reached, and found in Kubernetes, on its IPv6 address.
    for (const [name, address] of Object.entries(resolved.kubeletAddresses))
      assert.match(address as string, /^2001:db8:/, `${name}`);
    assert.equal(
      recorder.named("prod-prod-edge-1-install").inputs.node,
      "2001:db8:300:0:21a:2bff:fe3c:4d5e",
    );
    // The OpenStack group lets the other sites' prefixes in, and 51820 nowhere (routed, not KubeSpan).
    const rules = rulesOf(recorder, "prod-nodes").map((r) => r.join());
    assert.ok(rules.includes("IPv6,tcp,10250,2001:db8:100::/48"));
    // Cilium's VXLAN travels over IPv6 (tunnel mode, IPv6 underlay): from the sites' IPv6 prefixes.
    assert.ok(rules.includes("IPv6,udp,8472,2001:db8:300::/56"));
    assert.ok(rules.includes("IPv6,udp,8472,2001:db8:100::/48"));
    assert.ok(!rules.some((r) => r.startsWith("IPv4,udp,8472")), "no IPv4 underlay");
    assert.deepEqual(spec.cluster.network.cilium, {
      routingMode: "tunnel",
      underlayProtocol: "ipv6",
      podRangesRoutedBetweenSites: false,
      denyPodMetadataAccess: true,
    });
    assert.ok(!rules.some((r) => r.includes("51820")));
    const documents = documentsOf(recorder, "prod-oci-1");
    assert.equal(
      documents.some((d) => d?.kind === "ResolverConfig"),
      false,
      "the OCI nodes keep OCI's resolvers",
    );
  });
});

describe("pods kept off the cloud metadata service (cni: cilium)", () => {
  /** The policy objects in a node's inline manifests, by manifest name. */
  function inlinePolicies(recorder: any, hostname: string): Map<string, any[]> {
    const manifests = documentsOf(recorder, hostname).flatMap(
      (d) => (d?.cluster?.inlineManifests ?? []) as { name: string; contents: string }[],
    );
    return new Map(
      manifests.map((m) => [m.name, parseAllDocuments(m.contents).map((d) => d.toJS())]),
    );
  }

  it("applies, from the control planes, a clusterwide policy denying every pod 169.254.169.254 and nothing else", async () => {
    const { recorder } = await run(cloudCluster, (v) => (v.cluster.network.cni = "cilium"));
    const policies = inlinePolicies(recorder, "cp-1");
    const [policy, ...more] = policies.get("zz-talos-platform-deny-pod-metadata") ?? [];
    assert.deepEqual(more, []);
    assert.equal(policy.apiVersion, "cilium.io/v2");
    assert.equal(policy.kind, "CiliumClusterwideNetworkPolicy");
    assert.deepEqual(
      policy.spec.endpointSelector,
      {},
      "every pod (host-network ones are not endpoints)",
    );
    assert.deepEqual(policy.spec.egressDeny, [{ toCIDR: ["169.254.169.254/32"] }]);
    assert.deepEqual(
      policy.spec.enableDefaultDeny,
      { egress: false, ingress: false },
      "a deny-only policy would otherwise put every pod into default-deny egress",
    );
    assert.equal(policy.spec.egress, undefined);
    assert.equal(policy.spec.ingress, undefined);
    // Talos applies manifests in ID order and stops at a kind not registered yet: after Cilium's URL.
    assert.ok("99-zz-talos-platform-deny-pod-metadata" > "99-https://raw.githubusercontent.com/");
    for (const worker of ["oci-1", "os-1"])
      assert.equal(
        inlinePolicies(recorder, worker).size,
        0,
        `${worker}: workers apply no manifests`,
      );
    const cp = documentsOf(recorder, "cp-1").filter((d) => d?.cluster?.inlineManifests);
    for (const document of cp)
      assert.ok(validateTalos(document), JSON.stringify(validateTalos.errors));
  });

  it("leaves it out when the stack opts out, without cloud nodes, and with flannel", async () => {
    const optOut = await run(cloudCluster, (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { denyPodMetadataAccess: false };
    });
    assert.equal(inlinePolicies(optOut.recorder, "cp-1").size, 0);
    const homeOnly = await run(proxmoxCluster, (v) => (v.cluster.network.cni = "cilium"));
    assert.equal(inlinePolicies(homeOnly.recorder, "cp-1").size, 0);
    const opted = await run(proxmoxCluster, (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { denyPodMetadataAccess: true };
    });
    assert.equal(inlinePolicies(opted.recorder, "cp-1").size, 1, "asked for without cloud nodes");
    const flannel = await run(cloudCluster, () => {});
    assert.equal(inlinePolicies(flannel.recorder, "cp-1").size, 0);
  });

  it("is in prod's control-plane configs", async () => {
    const { recorder } = await runFoundation(readStackFile("prod"), {
      stack: "prod",
      secrets: STACK_SECRETS,
    });
    const policies = inlinePolicies(recorder, "prod-cp-1");
    assert.ok(policies.has("zz-talos-platform-deny-pod-metadata"));
    assert.ok(policies.has("flux-system-sync"), "beside the Flux handoff's");
  });
});
