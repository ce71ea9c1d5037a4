// components/talos/patches.ts: the machine-config documents the program generates, each valid for
// Talos (checked against the schema the program ships), and the order patches merge in.
import { strict as assert } from "node:assert";
import { parse } from "yaml";
import { validatePlatformConfig } from "../components/config/validate";
import type { NodeSpec } from "../components/spec/types";
import {
  clusterDocuments,
  clusterNetworkPatch,
  ConfigDocument,
  hostnameDocument,
  linkAliasDocument,
  linkDocument,
  etcdAdvertisedAddress,
  machinePatches,
  nodeDocuments,
} from "../components/talos/patches";
import { mixedCluster, proxmoxCluster, validTalos, validTalos113 } from "./fixtures";
import {
  compareMinor,
  GENERATOR_MACHINERY,
  OLDEST_CONFIGURED,
  TALOS_RELEASES,
} from "../components/talos/versions";

/** Validates one emitted document against the Talos v1.13.9 schema (fragments as a v1alpha1 document). */
function assertValidTalos(document: ConfigDocument): void {
  const candidate = "kind" in document ? document : { version: "v1alpha1", ...document };
  const validate = validTalos113();
  assert.ok(
    validate(candidate),
    `${JSON.stringify(candidate)} is not a valid Talos 1.13 document: ${JSON.stringify(validate.errors)}`,
  );
}

const spec = validatePlatformConfig(mixedCluster(), "Pulumi.test.yaml");
const byName = (name: string): NodeSpec => spec.nodes.find((n) => n.name === name)!;
const INSTALLER = "factory.talos.dev/nocloud-installer/abc:v1.13.9";
const kinds = (documents: ConfigDocument[]) =>
  documents.map((d) => d.kind ?? Object.keys(d).join("+"));

describe("Talos patch builders", () => {
  it("sets a static hostname with automatic hostnames off, as merged 1.12+ configs require", () => {
    assert.deepEqual(hostnameDocument("cp-1"), {
      apiVersion: "v1alpha1",
      kind: "HostnameConfig",
      hostname: "cp-1",
      auto: "off",
    });
  });

  it("selects the NIC by its MAC, lowercased", () => {
    assert.deepEqual(linkAliasDocument("net0", "BC:24:11:00:00:21"), {
      apiVersion: "v1alpha1",
      kind: "LinkAliasConfig",
      name: "net0",
      selector: { match: 'mac(link.permanent_addr) == "bc:24:11:00:00:21"' },
    });
  });

  it("configures static addresses and a default route per gateway on the link", () => {
    assert.deepEqual(
      linkDocument({
        addresses: ["192.0.2.11/24", "2001:db8::11/64"],
        gateway: "192.0.2.1",
        gateway6: "2001:db8::1",
        mac: "02:00:00:00:00:01",
      }),
      {
        apiVersion: "v1alpha1",
        kind: "LinkConfig",
        name: "net0",
        up: true,
        addresses: [{ address: "192.0.2.11/24" }, { address: "2001:db8::11/64" }],
        routes: [{ gateway: "192.0.2.1" }, { gateway: "2001:db8::1" }],
      },
    );
  });

  it("names the link by interface when no MAC is known", () => {
    assert.equal(
      linkDocument({ addresses: ["2001:db8::31/64"], interface: "enp1s0" }).name,
      "enp1s0",
    );
  });

  it("puts the VIP on control planes only, on the node's link", () => {
    const cp = nodeDocuments(spec.cluster, byName("cp-1"), INSTALLER);
    assert.deepEqual(
      cp.find((d) => d.kind === "Layer2VIPConfig"),
      { apiVersion: "v1alpha1", kind: "Layer2VIPConfig", name: "192.0.2.10", link: "net0" },
    );
    assert.equal(
      nodeDocuments(spec.cluster, byName("worker-1"), INSTALLER).some(
        (d) => d.kind === "Layer2VIPConfig",
      ),
      false,
    );
  });

  it("gives each node its hostname, install disk and installer image", () => {
    const documents = nodeDocuments(
      spec.cluster,
      byName("metal-1"),
      "factory.talos.dev/metal-installer/abc:v1.13.9",
    );
    assert.deepEqual(kinds(documents), [
      "HostnameConfig",
      "machine",
      "ResolverConfig",
      "machine",
      "LinkConfig",
    ]);
    assert.deepEqual(documents[1], {
      machine: {
        install: { disk: "/dev/nvme0n1", image: "factory.talos.dev/metal-installer/abc:v1.13.9" },
      },
    });
  });

  it("lets control planes schedule workloads only as the cluster says", () => {
    const documents = nodeDocuments(spec.cluster, byName("cp-1"), INSTALLER);
    assert.deepEqual(
      documents.find((d) => (d.cluster as any)?.allowSchedulingOnControlPlanes !== undefined),
      {
        cluster: { allowSchedulingOnControlPlanes: false },
      },
    );
  });

  it("puts the endpoint and VIP into both certificate SAN lists", () => {
    const sans = clusterDocuments(spec.cluster)[0];
    assert.deepEqual(sans, {
      machine: { certSANs: ["api.demo.example.net", "192.0.2.10"] },
      cluster: { apiServer: { certSANs: ["api.demo.example.net", "192.0.2.10"] } },
    });
  });

  it("turns off the CNI and kube-proxy for Cilium", () => {
    assert.deepEqual(
      clusterNetworkPatch({ ...spec.cluster.network, cni: "none", kubeProxy: false }),
      {
        cluster: { network: { cni: { name: "none" } }, proxy: { disabled: true } },
      },
    );
  });

  it("never emits the deprecated machine.network section", () => {
    for (const node of spec.nodes) {
      for (const document of [
        ...clusterDocuments(spec.cluster),
        ...nodeDocuments(spec.cluster, node, INSTALLER),
      ]) {
        assert.equal((document.machine as any)?.network, undefined);
      }
    }
  });

  it("emits only documents that validate against the Talos v1.13.9 schema", () => {
    const cilium = {
      ...spec.cluster,
      network: {
        ...spec.cluster.network,
        cni: "none" as const,
        kubeProxy: false,
        ntpServers: ["time.example.net"],
        searchDomains: ["example.net"],
        podSubnets: ["10.244.0.0/16"],
      },
    };
    const documents = [
      ...clusterDocuments(cilium),
      ...spec.nodes.flatMap((node) =>
        nodeDocuments(cilium, { ...node, labels: { "example.net/tier": "a" } }, INSTALLER),
      ),
    ];
    assert.ok(documents.length > 20);
    documents.forEach(assertValidTalos);
  });

  it("emits only documents every contract it configures knows (Talos 1.12 to the generator's)", () => {
    const documents = [
      ...clusterDocuments(spec.cluster),
      ...spec.nodes.flatMap((node) => nodeDocuments(spec.cluster, node, INSTALLER)),
    ];
    const minors = TALOS_RELEASES.map((r) => r.minor).filter(
      (minor) =>
        compareMinor(minor, OLDEST_CONFIGURED) >= 0 &&
        compareMinor(minor, GENERATOR_MACHINERY) <= 0,
    );
    assert.deepEqual(minors, ["1.12", "1.13"]);
    for (const minor of minors) {
      const validate = validTalos(minor);
      for (const document of documents) {
        const candidate = "kind" in document ? document : { version: "v1alpha1", ...document };
        assert.ok(validate(candidate), `Talos ${minor}: ${JSON.stringify(candidate)}`);
      }
    }
    // Why the floor: Talos 1.11 does not know the network documents (a node refuses the config).
    const hostname = documents.find((d) => "kind" in d && d.kind === "HostnameConfig");
    assert.ok(hostname);
    assert.equal(validTalos("1.11")(hostname), false);
  });

  it("catches an invalid document (the schema check can fail)", () => {
    assert.throws(
      () => assertValidTalos({ machine: { netwrk: {} } }),
      /not a valid Talos 1.13 document/,
    );
    assert.throws(() =>
      assertValidTalos({
        apiVersion: "v1alpha1",
        kind: "HostnameConfig",
        hostname: "x",
        color: "red",
      }),
    );
  });

  it("orders patches so the stack file's cluster, role and node patches win over generated ones", () => {
    const values: any = mixedCluster();
    values.cluster.patches = {
      all: ["machine:\n  sysctls: {a: '1'}\n"],
      worker: ["machine:\n  sysctls: {b: '2'}\n"],
      controlplane: ["machine:\n  sysctls: {c: '3'}\n"],
    };
    values.nodes[3].patches = [{ machine: { sysctls: { d: "4" } } }];
    const withPatches = validatePlatformConfig(values, "x");
    const patches = machinePatches(withPatches.cluster, withPatches.nodes[3], INSTALLER);
    const generated =
      clusterDocuments(withPatches.cluster).length +
      nodeDocuments(withPatches.cluster, withPatches.nodes[3], INSTALLER).length;
    assert.equal(patches.length, generated + 3);
    assert.deepEqual(
      patches.slice(generated).map((p) => parse(p).machine.sysctls),
      [{ a: "1" }, { b: "2" }, { d: "4" }],
    );
    assert.deepEqual(parse(patches[0]).machine.certSANs, ["api.demo.example.net", "192.0.2.10"]);
  });
});

describe("etcd's advertised address on control planes", () => {
  /** The Proxmox cluster dual-stack and IPv6-first, like prod: each node's IPv6 address first. */
  function ipv6First(): any {
    const values: any = proxmoxCluster();
    values.cluster.vip = "2001:db8::10";
    values.cluster.network.podSubnets = ["2001:db8:1000::/56", "10.244.0.0/16"];
    values.cluster.network.serviceSubnets = ["2001:db8:1100::/108", "10.96.0.0/12"];
    for (const [i, node] of values.nodes.entries()) {
      node.network = {
        addresses: [`2001:db8::1${i + 1}/64`, `192.0.2.1${i + 1}/24`],
        gateway: "192.0.2.1",
        gateway6: "2001:db8::1",
      };
    }
    return values;
  }
  const advertised = (documents: ConfigDocument[]) =>
    documents
      .map((d) => (d.cluster as { etcd?: { advertisedSubnets?: string[] } } | undefined)?.etcd)
      .filter((etcd) => etcd?.advertisedSubnets !== undefined)
      .map((etcd) => etcd!.advertisedSubnets);

  it("pins an IPv6-first control plane's etcd to the IPv6 address its kubelet and the health check use", () => {
    const ipv6 = validatePlatformConfig(ipv6First(), "x");
    for (const node of ipv6.nodes) {
      assert.ok("kubeletAddresses" in node, node.name);
      assert.equal(node.kubeletAddresses[0], etcdAdvertisedAddress(node));
      const documents = nodeDocuments(ipv6.cluster, node, INSTALLER);
      assert.deepEqual(advertised(documents), [[`${node.kubeletAddresses[0]}/128`]], node.name);
      documents.forEach(assertValidTalos);
    }
  });

  it("leaves etcd's default where it is the kubelet's address: one IPv4 address, and workers", () => {
    for (const node of spec.nodes) {
      assert.deepEqual(advertised(nodeDocuments(spec.cluster, node, INSTALLER)), [], node.name);
    }
  });

  it("pins an IPv4 control plane whose kubelet address is not its lowest (Talos advertises the lowest)", () => {
    const values: any = proxmoxCluster();
    values.nodes[0].network.addresses = ["192.0.2.11/24", "192.0.2.5/24"];
    const node = validatePlatformConfig(values, "x").nodes[0];
    assert.equal(etcdAdvertisedAddress(node), "192.0.2.11");
  });

  it("pins a cloud control plane to its declared IPv6 address on an IPv6-first cluster", () => {
    const values: any = ipv6First();
    values.nodes[2] = {
      name: "cp-3",
      role: "controlplane",
      platform: "openstack",
      openstack: { fixedIp: "203.0.113.13", fixedIp6: "2001:db8:300::13" },
    };
    values.openstack = {
      networkId: "net",
      subnetId: "subnet",
      subnet6Id: "subnet6",
      flavor: "m1.large",
    };
    values.cluster.network.connectivity = "routed";
    delete values.cluster.vip;
    const node = validatePlatformConfig(values, "x").nodes[2];
    assert.equal(etcdAdvertisedAddress(node), "2001:db8:300::13");
  });

  it("leaves the pin to an operator's patch that sets advertisedSubnets (Talos would append both)", () => {
    const values: any = ipv6First();
    values.cluster.patches = {
      controlplane: ["cluster:\n  etcd:\n    advertisedSubnets: [2001:db8::/64]\n"],
    };
    const patched = validatePlatformConfig(values, "x");
    assert.deepEqual(advertised(nodeDocuments(patched.cluster, patched.nodes[0], INSTALLER)), []);
  });
});

describe("the kubelet serving-certificate approver", () => {
  const ROTATE = { machine: { kubelet: { extraArgs: { "rotate-server-certificates": "true" } } } };
  const APPROVER =
    "https://raw.githubusercontent.com/alex1989hu/kubelet-serving-cert-approver/v0.11.0/deploy/standalone-install.yaml";
  const specWith = (change: (v: any) => void) => {
    const values: any = mixedCluster();
    change(values);
    return validatePlatformConfig(values, "Pulumi.test.yaml");
  };
  const manifests = (s: ReturnType<typeof specWith>, name: string) =>
    nodeDocuments(
      s.cluster,
      s.nodes.find((n) => n.name === name)!,
      INSTALLER,
    ).flatMap((d) => (d as any).cluster?.extraManifests ?? []);

  it("installs the approver from the control planes when a patch turns rotation on", () => {
    const rotating = specWith((v) => (v.cluster.patches = { all: [ROTATE] }));
    assert.equal(rotating.cluster.servingCertApprover, APPROVER);
    assert.deepEqual(manifests(rotating, "cp-1"), [APPROVER]);
    assert.deepEqual(manifests(rotating, "worker-1"), []);
    const document = nodeDocuments(rotating.cluster, rotating.nodes[0], INSTALLER).find(
      (d) => (d as any).cluster?.extraManifests,
    )!;
    assertValidTalos(document);
  });

  it("finds rotation turned on in a YAML string patch of one node only, as a boolean too", () => {
    const rotating = specWith(
      (v) =>
        (v.nodes[4].patches = [
          "machine:\n  kubelet:\n    extraArgs:\n      rotate-server-certificates: true\n",
        ]),
    );
    assert.deepEqual(manifests(rotating, "cp-2"), [APPROVER]);
  });

  it("installs nothing without rotation, or when the stack brings its own approver", () => {
    assert.equal(spec.cluster.servingCertApprover, undefined);
    assert.deepEqual(manifests(spec, "cp-1"), []);
    const own = specWith((v) => {
      v.cluster.patches = { all: [ROTATE] };
      v.cluster.kubeletServingCertApprover = false;
    });
    assert.deepEqual(manifests(own, "cp-1"), []);
    const off = specWith(
      (v) =>
        (v.cluster.patches = {
          all: [{ machine: { kubelet: { extraArgs: { "rotate-server-certificates": "false" } } } }],
        }),
    );
    assert.deepEqual(manifests(off, "cp-1"), []);
  });
});
