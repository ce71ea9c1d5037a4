import fc from "fast-check";
import { strict as assert } from "node:assert";
import { parse, parseAllDocuments } from "yaml";
import { spread } from "../components/nodes/placement";
import { clone, cloudCluster } from "./fixtures";
import { readStackFile, runFoundation, STACK_SECRETS, StackValues } from "./harness";
import { RecordedResource, Recorder } from "./mocks";

const T = {
  ociInstance: "oci:Core/instance:Instance",
  ociImage: "oci:Core/image:Image",
  shapes: "oci:Core/shapeManagement:ShapeManagement",
  capabilities: "oci:Core/computeImageCapabilitySchema:ComputeImageCapabilitySchema",
  osInstance: "openstack:compute/instance:Instance",
  osVolume: "openstack:blockstorage/volume:Volume",
  osPort: "openstack:networking/port:Port",
  osImage: "openstack:images/image:Image",
  osRule: "openstack:networking/secGroupRule:SecGroupRule",
  osServerGroup: "openstack:compute/serverGroup:ServerGroup",
  apply: "talos:machine/configurationApply:ConfigurationApply",
  bootstrap: "talos:machine/bootstrap:Bootstrap",
  urls: "talos:imageFactory/getUrls:getUrls",
};

/** The YAML documents of a generated (mock) machine config. */
const documents = (config: string) => parseAllDocuments(config).map((d) => d.toJS());
const hostnameOf = (config: string) =>
  documents(config).find((d) => d?.kind === "HostnameConfig")?.hostname;
const installImageOf = (config: string) =>
  documents(config).find((d) => d?.machine?.install)?.machine.install.image;
const byName = (resources: RecordedResource[]) =>
  [...resources].sort((a, b) => a.name.localeCompare(b.name));

describe("cloud nodes", () => {
  let recorder: Recorder;
  let resolved: any;
  before(async () => ({ recorder, resolved } = await runFoundation(cloudCluster())));

  describe("OCI", () => {
    it("boots each instance with its own config as base64 metadata.user_data", () => {
      const instances = byName(recorder.ofType(T.ociInstance));
      assert.deepEqual(
        instances.map((i) => i.inputs.displayName),
        ["oci-1", "oci-2", "oci-3"],
      );
      for (const instance of instances) {
        const config = Buffer.from(instance.inputs.metadata.user_data, "base64").toString("utf8");
        assert.equal(hostnameOf(config), instance.inputs.displayName);
        assert.equal(documents(config)[0].machine.type, "worker");
        assert.match(
          installImageOf(config),
          /^factory\.talos\.dev\/oracle-installer\/[0-9a-f]{64}:v1\.13\.9$/,
        );
      }
    });

    it("uses the arm64 image for Ampere shapes", () => {
      const oracle = recorder.invokesOf(T.urls).filter((u) => u.inputs.platform === "oracle");
      assert.deepEqual(
        oracle.map((u) => u.inputs.architecture),
        ["arm64"],
      );
    });

    it("spreads the pool over availability and fault domains by position", () => {
      const placement = byName(recorder.ofType(T.ociInstance)).map((i) => [
        i.inputs.availabilityDomain,
        i.inputs.faultDomain,
      ]);
      assert.deepEqual(placement, [
        ["Uocm:EU-FRANKFURT-1-AD-1", "FAULT-DOMAIN-1"],
        ["Uocm:EU-FRANKFURT-1-AD-2", "FAULT-DOMAIN-1"],
        ["Uocm:EU-FRANKFURT-1-AD-1", "FAULT-DOMAIN-2"],
      ]);
    });

    it("sizes a Flex instance, its boot volume and its VNIC as declared", () => {
      const instance = recorder.named("demo-oci-1-instance").inputs;
      assert.equal(instance.shape, "VM.Standard.A1.Flex");
      assert.deepEqual(instance.shapeConfig, { ocpus: 2, memoryInGbs: 12 });
      assert.deepEqual(instance.sourceDetails, {
        sourceType: "image",
        sourceId: "ocid1.image.oc1..demo-talos-image-oci",
        bootVolumeSizeInGbs: "50",
      });
      assert.deepEqual(instance.createVnicDetails, {
        subnetId: "ocid1.subnet.oc1.eu-frankfurt-1.example",
        assignPublicIp: "false",
        privateIp: "198.51.100.21",
        nsgIds: ["ocid1.networksecuritygroup.oc1..demo-nodes-nsg"],
        hostnameLabel: "oci-1",
      });
      assert.deepEqual(instance.launchOptions, { networkType: "PARAVIRTUALIZED" });
      assert.deepEqual(instance.freeformTags, { "talos-cluster": "demo", "talos-role": "worker" });
    });

    it("imports the oracle image once and makes it runnable on the nodes' shape", () => {
      const [image] = recorder.ofType(T.ociImage);
      assert.deepEqual(image.inputs.imageSourceDetails, {
        sourceType: "objectStorageUri",
        sourceUri:
          "https://objectstorage.eu-frankfurt-1.oraclecloud.com/p/example/n/ns/b/talos/o/oracle-arm64.qcow2",
        sourceImageType: "QCOW2",
      });
      assert.equal(image.inputs.launchMode, "PARAVIRTUALIZED");
      assert.deepEqual(
        recorder.ofType(T.shapes).map((s) => s.inputs.shapeName),
        ["VM.Standard.A1.Flex"],
      );
    });

    it("launches each instance only after the image's capability schema and its shape's compatibility exist", () => {
      const [schema] = recorder.ofType(T.capabilities);
      const [shape] = recorder.ofType(T.shapes);
      for (const instance of recorder.ofType(T.ociInstance)) {
        assert.ok(instance.options.dependencies.includes(schema.urn), instance.name);
        assert.ok(instance.options.dependencies.includes(shape.urn), instance.name);
      }
    });

    it("never recreates an instance for new user data or a new image", () => {
      for (const instance of recorder.ofType(T.ociInstance)) {
        assert.deepEqual(instance.options.ignoreChanges, ["metadata", "sourceDetails.sourceId"]);
      }
    });

    it("keeps user data secret and sets the region on an explicit provider, without credentials", () => {
      // The engine keeps the whole metadata map secret once a value in it is.
      for (const instance of recorder.ofType(T.ociInstance)) {
        assert.ok(instance.secretPaths.some((p) => p === "metadata" || p === "metadata.user_data"));
      }
      const provider = recorder.named("demo-oci-provider");
      assert.deepEqual(provider.inputs, { region: "eu-frankfurt-1" });
      assert.ok(
        recorder.ofType(T.ociInstance).every((i) => i.options.provider.startsWith(provider.urn)),
      );
    });
  });

  describe("OpenStack", () => {
    it("boots each instance from a volume made from the Talos image, with its config as user data on a config drive", () => {
      const instances = byName(recorder.ofType(T.osInstance));
      assert.deepEqual(
        instances.map((i) => i.inputs.name),
        ["os-1", "os-2"],
      );
      for (const instance of instances) {
        assert.equal(hostnameOf(instance.inputs.userData), instance.inputs.name);
        assert.match(
          installImageOf(instance.inputs.userData),
          /^factory\.talos\.dev\/openstack-installer\//,
        );
        assert.equal(instance.inputs.configDrive, true);
        assert.equal(instance.inputs.stopBeforeDestroy, true);
        assert.equal(instance.inputs.flavorName, "m1.large");
        assert.deepEqual(instance.inputs.blockDevices, [
          {
            sourceType: "volume",
            uuid: `volume-demo-${instance.inputs.name}-boot`,
            destinationType: "volume",
            bootIndex: 0,
            deleteOnTermination: false,
          },
        ]);
        assert.deepEqual(instance.inputs.networks, [
          { port: `port-demo-${instance.inputs.name}-port` },
        ]);
        assert.deepEqual(instance.options.ignoreChanges, ["userData", "flavorName"]);
        assert.ok(instance.secretPaths.includes("userData"));
      }
      const boot = recorder.named("demo-os-1-boot");
      assert.deepEqual(
        [boot.inputs.size, boot.inputs.imageId, boot.inputs.availabilityZone],
        [40, "image-demo-talos-image-openstack", "az1"],
      );
      assert.deepEqual(boot.options.ignoreChanges, ["imageId"]);
      assert.equal(recorder.named("demo-os-2-instance").inputs.availabilityZone, "az2");
    });

    it("uploads talos-<version>-openstack-amd64 from the Image Factory", () => {
      const [image] = recorder.ofType(T.osImage);
      assert.equal(image.inputs.name, "talos-v1.13.9-openstack-amd64");
      assert.match(image.inputs.imageSourceUrl, /\/v1\.13\.9\/openstack-amd64\.raw\.xz$/);
      assert.deepEqual(
        [image.inputs.containerFormat, image.inputs.diskFormat, image.inputs.decompress],
        ["bare", "raw", true],
      );
    });

    it("gives each node a port with its fixed IP and a stable MAC the config names the link by", () => {
      const port = recorder.named("demo-os-1-port").inputs;
      assert.deepEqual(port.fixedIps, [{ subnetId: "subnet-example", ipAddress: "203.0.113.21" }]);
      assert.match(port.macAddress, /^02(:[0-9a-f]{2}){5}$/);
      const alias = documents(recorder.named("demo-os-1-instance").inputs.userData).find(
        (d) => d?.kind === "LinkAliasConfig",
      );
      assert.equal(alias.selector.match, `mac(link.permanent_addr) == "${port.macAddress}"`);
    });

    it("opens exactly the node-to-node flows workers need, from nodes here and the other sites' node addresses", () => {
      const rules = recorder
        .ofType(T.osRule)
        .map((r) => [
          r.inputs.ethertype,
          r.inputs.protocol,
          r.inputs.portRangeMin,
          r.inputs.remoteIpPrefix ?? (r.inputs.remoteGroupId ? "nodes" : "?"),
        ]);
      const cps = ["192.0.2.11/32", "192.0.2.12/32", "192.0.2.13/32"];
      const ociNodes = ["198.51.100.21/32", "198.51.100.22/32", "198.51.100.23/32"];
      assert.deepEqual(
        rules.sort(),
        [
          // Talos API and kubelet: from the control planes only (at the Proxmox site).
          ...cps.map((p) => ["IPv4", "tcp", 50000, p]),
          ...cps.map((p) => ["IPv4", "tcp", 10250, p]),
          // flannel's VXLAN: from every node, here and at the other sites.
          ["IPv4", "udp", 4789, "nodes"],
          ["IPv6", "udp", 4789, "nodes"],
          ...[...cps, ...ociNodes].map((p) => ["IPv4", "udp", 4789, p]),
          // Path MTU discovery, from anywhere.
          ["IPv4", "icmp", 3, "0.0.0.0/0"],
          ["IPv6", "ipv6-icmp", 2, "::/0"],
          // The workstation: the Talos API (no control plane here, so no 6443).
          ["IPv4", "tcp", 50000, "0.0.0.0/0"],
          ["IPv6", "tcp", 50000, "::/0"],
        ].sort(),
      );
      assert.ok(
        recorder.ofType(T.osRule).every((r) => r.inputs.direction === "ingress"),
        "ingress only",
      );
    });
  });

  describe("delivery and bootstrap across platforms", () => {
    it("pushes later config changes to every cloud node after its instance exists", () => {
      for (const node of ["oci-1", "os-2"]) {
        const apply = recorder.named(`demo-${node}-config`);
        assert.ok(
          apply.options.dependencies.some(
            (urn) =>
              urn.endsWith(`-instance::demo-${node}-instance`) ||
              urn.includes(`demo-${node}-instance`),
          ),
        );
        assert.equal(apply.inputs.onDestroy, undefined);
      }
      assert.equal(recorder.named("demo-oci-2-config").inputs.node, "198.51.100.22");
      assert.equal(recorder.named("demo-os-1-config").inputs.node, "203.0.113.21");
    });

    it("reports every node's address by role, cloud ones included", () => {
      assert.deepEqual(Object.keys(resolved.nodes.worker).sort(), [
        "oci-1",
        "oci-2",
        "oci-3",
        "os-1",
        "os-2",
      ]);
    });
  });
});

describe("cloud node variations", () => {
  async function run(change: (v: any) => void, options = {}) {
    const values: StackValues = clone(cloudCluster());
    change(values);
    return runFoundation(values, options);
  }

  it("looks the availability domains up when the stack lists none, and spreads over all of them", async () => {
    const { recorder } = await run((v) => delete v.oci.availabilityDomains);
    const placement = byName(recorder.ofType(T.ociInstance)).map(
      (i) => i.inputs.availabilityDomain,
    );
    assert.deepEqual(placement, [
      "Uocm:EU-FRANKFURT-1-AD-1",
      "Uocm:EU-FRANKFURT-1-AD-2",
      "Uocm:EU-FRANKFURT-1-AD-3",
    ]);
    assert.equal(
      recorder.invokesOf("oci:Identity/getAvailabilityDomains:getAvailabilityDomains").length,
      1,
    );
  });

  it("makes an instance of another shape wait for that shape's compatibility entry", async () => {
    const { recorder } = await run((v) => {
      v.nodes[3].oci.shape = "VM.Standard.A2.Flex";
    });
    const shapes = new Map(recorder.ofType(T.shapes).map((s) => [s.inputs.shapeName, s.urn]));
    assert.deepEqual([...shapes.keys()].sort(), ["VM.Standard.A1.Flex", "VM.Standard.A2.Flex"]);
    const [schema] = recorder.ofType(T.capabilities);
    const dependencies = (name: string) =>
      recorder.named(`demo-${name}-instance`).options.dependencies;
    assert.ok(dependencies("oci-1").includes(shapes.get("VM.Standard.A2.Flex")!));
    assert.ok(!dependencies("oci-1").includes(shapes.get("VM.Standard.A1.Flex")!));
    assert.ok(dependencies("oci-2").includes(shapes.get("VM.Standard.A1.Flex")!));
    assert.ok(!dependencies("oci-2").includes(shapes.get("VM.Standard.A2.Flex")!));
    for (const name of ["oci-1", "oci-2"]) assert.ok(dependencies(name).includes(schema.urn));
  });

  it("uses an existing OCI image and Glance image by name without creating any", async () => {
    const { recorder } = await run((v) => {
      v.oci.image = { id: "ocid1.image.oc1..talos" };
      v.openstack.image = { name: "talos-v1.13.9-openstack-amd64" };
    });
    assert.equal(
      recorder.ofType(T.ociImage).length +
        recorder.ofType(T.osImage).length +
        recorder.ofType(T.shapes).length +
        recorder.ofType(T.capabilities).length,
      0,
    );
    assert.ok(
      recorder
        .named("demo-oci-1-instance")
        .options.dependencies.every((urn) => !/shapeManagement|ImageCapabilitySchema/.test(urn)),
    );
    assert.equal(
      recorder.named("demo-oci-1-instance").inputs.sourceDetails.sourceId,
      "ocid1.image.oc1..talos",
    );
    assert.equal(
      recorder.named("demo-os-1-boot").inputs.imageId,
      "glance-talos-v1.13.9-openstack-amd64",
    );
  });

  it("gives an OCI node a public IP but reaches its Talos API on the private address its certificate names", async () => {
    const { recorder, resolved } = await run((v) => {
      // Over KubeSpan the control planes reach the private address; routed sites could not.
      v.cluster.network.connectivity = "kubespan";
      v.nodes[3].oci = { assignPublicIp: true };
      delete v.nodes[6].openstack.fixedIp;
    });
    assert.equal(
      recorder.named("demo-oci-1-instance").inputs.createVnicDetails.assignPublicIp,
      "true",
    );
    // The public IPv4 is NAT Talos never learns: its certificate could not name it.
    const address = recorder.named("demo-oci-1-config").inputs.node;
    assert.match(address, /^198\.51\.100\.\d+$/);
    assert.equal(resolved.kubeletAddresses["oci-1"], address);
    assert.equal(resolved.nodes.worker["oci-1"], address);
    const health = recorder.invokesOf("talos:cluster/getHealth:getHealth")[0].inputs;
    assert.ok(health.workerNodes.includes(address), "matched by the address Kubernetes knows");
    assert.deepEqual(health.endpoints, ["192.0.2.11", "192.0.2.12", "192.0.2.13"]);
    const talosconfig = recorder.invokesOf("talos:client/getConfiguration:getConfiguration")[0];
    assert.ok(talosconfig.inputs.nodes.includes(address), "talosctl reaches it there too");
    assert.match(recorder.named("demo-os-1-config").inputs.node, /^192\.0\.2\.\d+$/);
  });

  it("reaches a public-IP OCI node with a fixed IPv6 address on that address", async () => {
    const { recorder } = await run((v) => {
      v.cluster.network.connectivity = "kubespan";
      v.nodes[3].oci = { assignPublicIp: true, ipv6Address: "2001:db8:21::21" };
      delete v.nodes[6].openstack.fixedIp;
    });
    assert.equal(recorder.named("demo-oci-1-config").inputs.node, "2001:db8:21::21");
  });

  it("pushes nothing to a cloud node marked unreachable", async () => {
    const { recorder } = await run((v) => (v.nodes[3].pushConfig = false));
    assert.equal(
      recorder.resources.some((r) => r.name === "demo-oci-1-config"),
      false,
    );
    assert.ok(recorder.named("demo-oci-2-config"));
  });

  /** Three OpenStack control planes and a worker, nothing else. */
  const openstackControlPlanes = (v: any) => {
    v.nodes = v.nodes.filter((n: any) => n.platform === "openstack");
    v.nodes[0].role = "controlplane";
    v.nodes.push(
      { name: "os-3", role: "controlplane", platform: "openstack" },
      { name: "os-4", role: "controlplane", platform: "openstack" },
    );
    delete v.proxmox;
    delete v.oci;
  };

  it("bootstraps an OpenStack first control plane once its instance exists and its config is pushed", async () => {
    const { recorder } = await run(openstackControlPlanes);
    const bootstrap = recorder.ofType(T.bootstrap)[0];
    assert.equal(bootstrap.inputs.node, "203.0.113.21");
    assert.ok(bootstrap.options.dependencies.includes(recorder.named("demo-os-1-config").urn));
    assert.ok(
      recorder
        .named("demo-os-1-config")
        .options.dependencies.includes(recorder.named("demo-os-1-instance").urn),
    );
    assert.equal(recorder.named("demo-os-1-instance").options.protect, true);
  });

  it("puts OpenStack control planes in one anti-affinity server group, workers outside it", async () => {
    const { recorder } = await run(openstackControlPlanes);
    const groups = recorder.ofType(T.osServerGroup);
    assert.deepEqual(
      groups.map((g) => [g.name, g.inputs.name, g.inputs.policies]),
      [["demo-controlplanes", "demo-controlplanes", ["anti-affinity"]]],
    );
    const hints = (node: string) => recorder.named(`demo-${node}-instance`).inputs.schedulerHints;
    for (const node of ["os-1", "os-3", "os-4"]) {
      assert.deepEqual(hints(node), [{ group: "demo-controlplanes-id" }], node);
    }
    assert.equal(hints("os-2"), undefined, "a worker is placed freely");
  });

  it("takes soft-anti-affinity, and no server group at all with none", async () => {
    const soft = await run((v) => {
      openstackControlPlanes(v);
      v.openstack.controlPlaneServerGroup = "soft-anti-affinity";
    });
    assert.deepEqual(soft.recorder.ofType(T.osServerGroup)[0].inputs.policies, [
      "soft-anti-affinity",
    ]);
    const none = await run((v) => {
      openstackControlPlanes(v);
      v.openstack.controlPlaneServerGroup = "none";
    });
    assert.deepEqual(none.recorder.ofType(T.osServerGroup), []);
    assert.equal(none.recorder.named("demo-os-1-instance").inputs.schedulerHints, undefined);
  });

  it("makes no server group when no control plane runs on OpenStack", async () => {
    const { recorder } = await run((v) => {
      for (const n of v.nodes) if (n.platform === "openstack") n.role = "worker";
    });
    assert.ok(recorder.ofType(T.osInstance).length > 0);
    assert.deepEqual(recorder.ofType(T.osServerGroup), []);
  });

  it("bootstraps an OCI first control plane that takes no pushes once its instance exists", async () => {
    const { recorder } = await run((v) => {
      v.nodes = [
        {
          name: "oci-cp",
          role: "controlplane",
          platform: "oci",
          pushConfig: false,
          oci: { privateIp: "198.51.100.30" },
        },
      ];
      delete v.cluster.vip;
      delete v.proxmox;
      delete v.openstack;
    });
    const bootstrap = recorder.ofType(T.bootstrap)[0];
    assert.equal(bootstrap.inputs.node, "198.51.100.30");
    assert.ok(bootstrap.options.dependencies.includes(recorder.named("demo-oci-cp-instance").urn));
  });

  it("floats the VIP between OpenStack control planes through a VIP port and allowed address pairs", async () => {
    const { recorder } = await run((v) => {
      v.nodes = v.nodes.filter((n: any) => n.platform === "openstack");
      v.nodes.push({
        name: "os-3",
        role: "controlplane",
        platform: "openstack",
        openstack: { fixedIp: "203.0.113.23" },
      });
      for (const node of v.nodes) node.role = "controlplane";
      delete v.proxmox;
      delete v.oci;
    });
    const vipPort = recorder.named("demo-vip").inputs;
    assert.deepEqual(vipPort.fixedIps, [{ subnetId: "subnet-example", ipAddress: "192.0.2.10" }]);
    assert.deepEqual(recorder.named("demo-os-1-port").inputs.allowedAddressPairs, [
      { ipAddress: "192.0.2.10" },
    ]);
    const vip = documents(recorder.named("demo-os-1-instance").inputs.userData).find(
      (d) => d?.kind === "Layer2VIPConfig",
    );
    assert.deepEqual(vip, {
      apiVersion: "v1alpha1",
      kind: "Layer2VIPConfig",
      name: "192.0.2.10",
      link: "net0",
    });
  });

  it("delivers a later config change through the Talos API, the instances' inputs changing only where ignored", async () => {
    const before = (await run(() => undefined)).recorder;
    const after = (
      await run(
        (v) =>
          (v.cluster.patches = { worker: [{ machine: { sysctls: { "vm.swappiness": "1" } } }] }),
      )
    ).recorder;
    const withoutUserData = (r: Recorder) =>
      r.ofType(T.ociInstance).map((i) => ({ ...i.inputs, metadata: "-" }));
    assert.deepEqual(withoutUserData(after), withoutUserData(before));
    assert.notEqual(
      after.named("demo-oci-1-config").inputs.machineConfigurationInput,
      before.named("demo-oci-1-config").inputs.machineConfigurationInput,
    );
  });

  it("creates no machine when a generated config is over its platform's user-data limit", async () => {
    const recorder = new Recorder();
    recorder.behaviour.configPadding = 30_000;
    const { rejections, runtimeErrors } = await runFoundation(cloudCluster(), {
      recorder,
      expectErrors: true,
    });
    assert.ok(runtimeErrors > 0);
    assert.equal(recorder.ofType(T.ociInstance).length, 0);
    assert.equal(recorder.ofType(T.osInstance).length, 0);
    const message = rejections.map(String).join("\n");
    assert.match(
      message,
      /nodes\[3\]: the machine config of oci-1 is [\d,]+ bytes as user data, over OCI's limit of 32,000 bytes/,
    );
    assert.doesNotMatch(message, /os-1 is/, "OpenStack's limit is larger; its nodes fit");
  });
});

describe("placement spread", () => {
  it("balances any pool over the domains and, within a domain, over the fault domains", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 3 }),
        (size, domains) => {
          const placed = Array.from({ length: size }, (_, i) => spread(i, domains));
          const perDomain = new Map<number, number>();
          for (const p of placed)
            perDomain.set(p.domainIndex, (perDomain.get(p.domainIndex) ?? 0) + 1);
          const counts = [...perDomain.values()];
          assert.ok(Math.max(...counts) - Math.min(...counts) <= 1 || perDomain.size < domains);
          for (let d = 0; d < domains; d++) {
            const faults = placed.filter((p) => p.domainIndex === d).map((p) => p.faultDomain);
            const perFault = ["FAULT-DOMAIN-1", "FAULT-DOMAIN-2", "FAULT-DOMAIN-3"].map(
              (f) => faults.filter((x) => x === f).length,
            );
            assert.ok(
              Math.max(...perFault) - Math.min(...perFault) <= 1,
              `${size}/${domains}: ${perFault}`,
            );
          }
        },
      ),
    );
  });
});

describe("prod with all four platforms", () => {
  it("loads and runs with Proxmox, bare-metal, OCI and OpenStack nodes", async () => {
    const values = readStackFile("prod");
    const platforms = new Set((values.nodes as any[]).map((n) => n.platform));
    assert.deepEqual([...platforms].sort(), ["baremetal", "oci", "openstack", "proxmox"]);
    const { recorder } = await runFoundation(values, { stack: "prod", secrets: STACK_SECRETS });
    assert.ok(recorder.ofType(T.ociInstance).length >= 2);
    assert.ok(recorder.ofType(T.osInstance).length >= 2);
    assert.equal(
      parse(recorder.ofType(T.osInstance)[0].inputs.userData.split("---\n")[0]).machine.type,
      "worker",
    );
  });
});
