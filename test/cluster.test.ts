import { strict as assert } from "node:assert";
import { parse } from "yaml";
import { clone, mixedCluster, proxmoxCluster } from "./fixtures";
import { isSecret, runFoundation, StackValues } from "./harness";
import { RecordedResource, Recorder } from "./mocks";

const T = {
  secrets: "talos:machine/secrets:Secrets",
  apply: "talos:machine/configurationApply:ConfigurationApply",
  bootstrap: "talos:machine/bootstrap:Bootstrap",
  kubeconfig: "talos:cluster/kubeconfig:Kubeconfig",
  schematic: "talos:imageFactory/schematic:Schematic",
  vm: "proxmoxve:index/vmLegacy:VmLegacy",
  image: "proxmoxve:download/file:File",
  getConfiguration: "talos:machine/getConfiguration:getConfiguration",
  talosconfig: "talos:client/getConfiguration:getConfiguration",
  health: "talos:cluster/getHealth:getHealth",
  urls: "talos:imageFactory/getUrls:getUrls",
};

const VANILLA = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";

describe("TalosCluster on Proxmox and bare metal", () => {
  let recorder: Recorder;
  let resolved: any;
  let outputs: any;
  before(async () => ({ recorder, resolved, outputs } = await runFoundation(mixedCluster())));

  /** Resources of a type, in the order of the stack file's nodes (registration order is not defined). */
  const byNode = (type: string) => {
    const order = ["cp-1", "cp-2", "cp-3", "worker-1", "metal-1"];
    const nodeOf = (r: RecordedResource) =>
      order.find((n) => r.name === `demo-${n}-vm` || r.name === `demo-${n}-config`)!;
    return recorder
      .ofType(type)
      .sort((a, b) => order.indexOf(nodeOf(a)) - order.indexOf(nodeOf(b)));
  };
  const vm = (node: string) => recorder.named(`demo-${node}-vm`);
  const apply = (node: string) => recorder.named(`demo-${node}-config`);
  const configFor = (node: string) =>
    recorder
      .invokesOf(T.getConfiguration)
      .find((i) => i.inputs.configPatches.some((p: string) => p.includes(`hostname: ${node}\n`)))!;

  describe("machine secrets", () => {
    it("creates one set, protected, with its Talos contract pinned and later changes ignored", () => {
      const secrets = recorder.ofType(T.secrets);
      assert.equal(secrets.length, 1);
      assert.equal(secrets[0].name, "demo-secrets");
      assert.equal(secrets[0].inputs.talosVersion, "v1.13.9");
      assert.equal(secrets[0].options.protect, true);
      assert.deepEqual(secrets[0].options.ignoreChanges, ["talosVersion"]);
      assert.deepEqual(secrets[0].options.additionalSecretOutputs.sort(), [
        "clientConfiguration",
        "machineSecrets",
      ]);
    });
  });

  describe("machines", () => {
    it("creates one VM per Proxmox node and none for bare metal", () => {
      assert.deepEqual(
        recorder
          .ofType(T.vm)
          .map((r) => r.inputs.name)
          .sort(),
        ["cp-1", "cp-2", "cp-3", "worker-1"],
      );
      assert.equal(
        recorder.resources.some((r) => r.name.startsWith("demo-metal-1-vm")),
        false,
      );
      assert.equal(recorder.named("demo-metal-1").type, "platform:baremetal:Node");
    });

    it("places each VM on its declared host with its VM ID and sizing", () => {
      assert.deepEqual(
        byNode(T.vm).map((r) => [
          r.inputs.name,
          r.inputs.nodeName,
          r.inputs.vmId,
          r.inputs.cpu.cores,
          r.inputs.memory.dedicated,
          r.inputs.disks[0].size,
        ]),
        [
          ["cp-1", "pve1", 101, 2, 4096, 32],
          ["cp-2", "pve2", 102, 2, 4096, 32],
          ["cp-3", "pve3", 103, 2, 4096, 32],
          ["worker-1", "pve1", 121, 4, 8192, 64],
        ],
      );
    });

    it("gives the VM its static address through cloud-init, its VLAN and its MAC", () => {
      const cp1 = vm("cp-1").inputs;
      assert.deepEqual(cp1.initialization.ipConfigs, [
        { ipv4: { address: "192.0.2.11/24", gateway: "192.0.2.1" } },
      ]);
      assert.equal(cp1.initialization.type, "nocloud");
      assert.deepEqual(cp1.initialization.dns, { servers: ["192.0.2.1"] });
      assert.equal(cp1.networkDevices[0].vlanId, 20);
      assert.match(cp1.networkDevices[0].macAddress, /^02(:[0-9A-F]{2}){5}$/);
      assert.equal(vm("worker-1").inputs.networkDevices[0].macAddress, "BC:24:11:00:00:21");
      assert.equal(vm("worker-1").inputs.networkDevices[0].vlanId, undefined);
    });

    it("creates every VM's disk from its host's Talos image through the API, stops it on destroy and never replaces it for a new image", () => {
      for (const r of recorder.ofType(T.vm)) {
        assert.match(
          r.inputs.disks[0].importFrom,
          /^local:import\/talos-demo-v1\.13\.9-[0-9a-f]{12}-nocloud-amd64\.qcow2$/,
        );
        assert.equal(r.inputs.disks[0].fileId, undefined, "fileId would import over SSH");
        assert.equal(r.inputs.stopOnDestroy, true);
        assert.deepEqual(r.options.ignoreChanges, ["disks[0].fileId", "disks[0].importFrom"]);
        assert.equal(
          r.inputs.agent.enabled,
          true,
          "the Proxmox image carries the QEMU guest agent",
        );
      }
    });

    it("protects control-plane VMs but not workers", () => {
      assert.deepEqual(
        byNode(T.vm).map((r) => [r.inputs.name, r.options.protect]),
        [
          ["cp-1", true],
          ["cp-2", true],
          ["cp-3", true],
          ["worker-1", false],
        ],
      );
    });

    it("creates every Proxmox resource through the stack's explicit provider", () => {
      const provider = recorder.named("demo-proxmox-provider");
      assert.equal(provider.inputs.endpoint, "https://pve1.example.net:8006/");
      for (const r of [...recorder.ofType(T.vm), ...recorder.ofType(T.image)]) {
        assert.ok(
          r.options.provider.startsWith(provider.urn),
          `${r.name} uses ${r.options.provider}`,
        );
      }
    });

    it("downloads the uncompressed qcow2 nocloud image once per Proxmox host that runs a node, as import content", () => {
      const images = recorder.ofType(T.image);
      assert.deepEqual(images.map((r) => r.inputs.nodeName).sort(), ["pve1", "pve2", "pve3"]);
      for (const image of images) {
        assert.match(
          image.inputs.url,
          /^https:\/\/factory\.talos\.dev\/image\/[0-9a-f]{64}\/v1\.13\.9\/nocloud-amd64\.qcow2$/,
        );
        assert.equal(image.inputs.decompressionAlgorithm, undefined);
        assert.equal(image.inputs.contentType, "import");
        assert.match(image.inputs.fileName, /\.qcow2$/);
        assert.equal(image.inputs.datastoreId, "local");
        assert.equal(image.inputs.uploadTimeout, 1800);
      }
    });

    it("configures the Proxmox provider with the API token only: no SSH", () => {
      const provider = recorder.named("demo-proxmox-provider");
      assert.equal(provider.inputs.ssh, undefined);
    });

    it("registers a schematic with the platform's extensions and uses the vanilla image elsewhere", () => {
      const schematics = recorder.ofType(T.schematic);
      assert.equal(schematics.length, 1);
      assert.deepEqual(parse(schematics[0].inputs.schematic), {
        customization: {
          systemExtensions: { officialExtensions: ["siderolabs/qemu-guest-agent"] },
        },
      });
      const urls = recorder.invokesOf(T.urls);
      assert.deepEqual(urls.map((u) => u.inputs.platform).sort(), ["metal", "nocloud"]);
      assert.equal(urls.find((u) => u.inputs.platform === "metal")!.inputs.schematicId, VANILLA);
      assert.notEqual(
        urls.find((u) => u.inputs.platform === "nocloud")!.inputs.schematicId,
        VANILLA,
      );
    });
  });

  describe("machine configuration", () => {
    it("generates one configuration per node for its role, without docs or examples", () => {
      const calls = recorder.invokesOf(T.getConfiguration);
      assert.equal(calls.length, 5);
      for (const call of calls) {
        assert.equal(call.inputs.clusterName, "demo");
        assert.equal(call.inputs.clusterEndpoint, "https://api.demo.example.net:6443");
        assert.equal(call.inputs.kubernetesVersion, "1.36.3");
        assert.equal(call.inputs.talosVersion, "v1.13.9");
        assert.equal(call.inputs.docs, false);
        assert.equal(call.inputs.examples, false);
      }
      assert.equal(configFor("cp-2").inputs.machineType, "controlplane");
      assert.equal(configFor("metal-1").inputs.machineType, "worker");
    });

    it("installs each node from its platform's installer image", () => {
      const installImage = (node: string) =>
        configFor(node)
          .inputs.configPatches.map((p: string) => parse(p))
          .find((d: any) => d.machine?.install)!.machine.install;
      assert.match(
        installImage("cp-1").image,
        /^factory\.talos\.dev\/nocloud-installer\/[0-9a-f]{64}:v1\.13\.9$/,
      );
      assert.deepEqual(installImage("metal-1"), {
        disk: "/dev/nvme0n1",
        image: `factory.talos.dev/metal-installer/${VANILLA}:v1.13.9`,
      });
    });

    it("passes the machine secrets to the generator field by field", () => {
      const secrets = configFor("cp-1").inputs.machineSecrets;
      assert.deepEqual(Object.keys(secrets).sort(), ["certs", "cluster", "secrets", "trustdinfo"]);
      assert.deepEqual(Object.keys(secrets.certs).sort(), [
        "etcd",
        "k8s",
        "k8sAggregator",
        "k8sServiceaccount",
        "os",
      ]);
      assert.equal(typeof secrets.certs.os.key, "string");
      assert.deepEqual(Object.keys(secrets.secrets).sort(), [
        "bootstrapToken",
        "secretboxEncryptionSecret",
      ]);
    });
  });

  describe("delivery", () => {
    it("pushes each node's configuration to its Talos address once its machine exists", () => {
      assert.deepEqual(
        byNode(T.apply).map((r) => [r.name, r.inputs.node]),
        [
          ["demo-cp-1-config", "192.0.2.11"],
          ["demo-cp-2-config", "192.0.2.12"],
          ["demo-cp-3-config", "192.0.2.13"],
          ["demo-worker-1-config", "192.0.2.21"],
          ["demo-metal-1-config", "2001:db8::31"],
        ],
      );
      for (const node of ["cp-1", "worker-1"]) {
        assert.ok(
          apply(node).options.dependencies.includes(vm(node).urn),
          `${node}'s config waits for its VM`,
        );
      }
    });

    it("applies exactly the generated configuration of that node", () => {
      for (const node of ["cp-1", "metal-1"]) {
        assert.ok(apply(node).inputs.machineConfigurationInput.includes(`hostname: ${node}\n`));
        assert.equal(apply(node).inputs.applyMode, "staged_if_needing_reboot");
      }
    });

    it("resets a removed bare-metal node, gracefully, and leaves VMs to their own destroy", () => {
      assert.deepEqual(apply("metal-1").inputs.onDestroy, {
        graceful: true,
        reboot: true,
        reset: true,
      });
      assert.equal(apply("cp-1").inputs.onDestroy, undefined);
    });
  });

  describe("bootstrap", () => {
    it("bootstraps only the first control plane, once", () => {
      const bootstraps = recorder.ofType(T.bootstrap);
      assert.equal(bootstraps.length, 1);
      assert.equal(bootstraps[0].inputs.node, "192.0.2.11");
    });

    it("bootstraps only after the first control plane has its configuration", () => {
      const bootstrap = recorder.ofType(T.bootstrap)[0];
      assert.ok(bootstrap.options.dependencies.includes(apply("cp-1").urn));
      const order = recorder.resources.map((r) => r.name);
      assert.ok(order.indexOf("demo-bootstrap") > order.indexOf("demo-cp-1-config"));
    });

    it("never bootstraps again when the first control plane changes", () => {
      assert.deepEqual(recorder.ofType(T.bootstrap)[0].options.ignoreChanges, [
        "node",
        "endpoint",
        "clientConfiguration",
        "timeouts",
      ]);
    });
  });

  describe("health and credentials", () => {
    it("checks the health of every node through the control planes", () => {
      const health = recorder.invokesOf(T.health);
      assert.equal(health.length, 1);
      assert.deepEqual(health[0].inputs.controlPlaneNodes, [
        "192.0.2.11",
        "192.0.2.12",
        "192.0.2.13",
      ]);
      // The bare-metal worker is reached on IPv6 but its kubelet reports its IPv4 (the service family).
      assert.deepEqual(health[0].inputs.workerNodes, ["192.0.2.21", "192.0.2.31"]);
      assert.deepEqual(health[0].inputs.endpoints, ["192.0.2.11", "192.0.2.12", "192.0.2.13"]);
      assert.equal(health[0].inputs.skipKubernetesChecks, false);
      assert.deepEqual(health[0].inputs.timeouts, { read: "10m" });
    });

    it("fetches the kubeconfig from the first control plane after bootstrap", () => {
      const kubeconfig = recorder.ofType(T.kubeconfig);
      assert.equal(kubeconfig.length, 1);
      assert.equal(kubeconfig[0].inputs.node, "192.0.2.11");
      // Renewed by any up within 90 days of its expiry, 60 days before certs' 30-day alarm.
      assert.equal(kubeconfig[0].inputs.certificateRenewalDuration, "2160h");
      assert.ok(kubeconfig[0].options.dependencies.includes(recorder.ofType(T.bootstrap)[0].urn));
    });

    it("renders a talosconfig with the control planes as endpoints and every node", () => {
      const talosconfig = recorder.invokesOf(T.talosconfig)[0].inputs;
      assert.deepEqual(talosconfig.endpoints, ["192.0.2.11", "192.0.2.12", "192.0.2.13"]);
      assert.deepEqual(talosconfig.nodes, [
        "192.0.2.11",
        "192.0.2.12",
        "192.0.2.13",
        "192.0.2.21",
        "2001:db8::31",
      ]);
    });

    it("exports the endpoint, node addresses by role and secret credentials", async () => {
      assert.equal(resolved.endpoint, "https://api.demo.example.net:6443");
      assert.deepEqual(resolved.nodes, {
        controlplane: { "cp-1": "192.0.2.11", "cp-2": "192.0.2.12", "cp-3": "192.0.2.13" },
        worker: { "worker-1": "192.0.2.21", "metal-1": "2001:db8::31" },
      });
      assert.match(resolved.kubeconfig, /client-key-data/);
      assert.match(resolved.talosconfig, /contexts:/);
      assert.equal(await isSecret(outputs.kubeconfig), true);
      assert.equal(await isSecret(outputs.talosconfig), true);
      assert.equal(await isSecret(outputs.endpoint), false);
      assert.deepEqual(Object.keys(resolved.configHashes), [
        "cp-1",
        "cp-2",
        "cp-3",
        "worker-1",
        "metal-1",
      ]);
    });

    it("exports the config contract the configs were generated for (up compares the next one with it)", () => {
      assert.equal(resolved.configContract, "v1.13.9");
      assert.equal(configFor("cp-1").inputs.talosVersion, resolved.configContract);
    });

    it("parents every resource under the cluster component (but the program's read of its own outputs)", () => {
      const cluster = recorder.named("demo");
      const byUrn = new Map(recorder.resources.map((r) => [r.urn, r]));
      const own = recorder.named("demo-last-outputs");
      for (const r of recorder.resources.filter((r) => r !== cluster && r !== own)) {
        let ancestor = byUrn.get(r.options.parent);
        while (ancestor && ancestor !== cluster) ancestor = byUrn.get(ancestor.options.parent);
        assert.equal(ancestor, cluster, `${r.name} is not under the cluster`);
      }
    });
  });
});

describe("TalosCluster variations", () => {
  async function run(change: (v: any) => void, options = {}) {
    const values: StackValues = clone(proxmoxCluster());
    change(values);
    return runFoundation(values, options);
  }

  it("skips the health check on previews, so a preview works while the cluster is down", async () => {
    const { recorder } = await run(() => undefined, { preview: true });
    assert.equal(recorder.invokesOf(T.health).length, 0);
    assert.equal(recorder.ofType(T.kubeconfig).length, 1);
  });

  it("skips the health check when disabled", async () => {
    const { recorder } = await run((v) => (v.cluster.health = { enabled: false }));
    assert.equal(recorder.invokesOf(T.health).length, 0);
  });

  it("checks only Talos and etcd health when the CNI is left to the operator", async () => {
    const { recorder } = await run((v) => (v.cluster.network = { cni: "none", kubeProxy: false }));
    assert.equal(recorder.invokesOf(T.health)[0].inputs.skipKubernetesChecks, true);
  });

  it("fails the update and fetches no kubeconfig when the cluster is unhealthy", async () => {
    const recorder = new Recorder();
    recorder.behaviour.healthError = "etcd is not healthy";
    const { runtimeErrors } = await runFoundation(proxmoxCluster(), {
      recorder,
      expectErrors: true,
    });
    assert.ok(runtimeErrors > 0);
    assert.equal(recorder.ofType(T.kubeconfig).length, 0);
  });

  it("bootstraps a single control-plane cluster on its only node", async () => {
    const { recorder } = await run((v) => v.nodes.splice(1));
    assert.deepEqual(
      recorder.ofType(T.bootstrap).map((r) => r.inputs.node),
      ["192.0.2.11"],
    );
  });

  it("bootstraps a bare-metal first control plane after its config push", async () => {
    const values: any = mixedCluster();
    values.nodes = [values.nodes[4]];
    values.nodes[0].role = "controlplane";
    delete values.cluster.vip;
    delete values.proxmox;
    const { recorder } = await runFoundation(values);
    const bootstrap = recorder.ofType(T.bootstrap)[0];
    assert.equal(bootstrap.inputs.node, "2001:db8::31");
    assert.ok(bootstrap.options.dependencies.includes(recorder.named("demo-metal-1-config").urn));
    assert.equal(
      recorder.named("demo-metal-1-config").options.protect,
      true,
      "a config whose removal resets a control plane is protected",
    );
  });

  it("protects nothing but the machine secrets when control-plane protection is off", async () => {
    const { recorder } = await run((v) => (v.cluster.protectControlPlanes = false));
    assert.deepEqual(
      recorder.resources.filter((r) => r.options.protect).map((r) => r.name),
      ["demo-secrets"],
    );
  });

  it("passes the Proxmox API token as a secret", async () => {
    const { recorder } = await run(() => undefined, {
      secrets: { proxmoxApiToken: "root@pam!pulumi=FAKE-SECRET-token" },
    });
    const provider = recorder.named("demo-proxmox-provider");
    assert.equal(provider.inputs.apiToken, "root@pam!pulumi=FAKE-SECRET-token");
    assert.ok(provider.secretPaths.includes("apiToken"));
  });

  it("delivers a later config change through the Talos API and leaves every VM untouched", async () => {
    const before = (await run(() => undefined)).recorder;
    const after = (
      await run(
        (v) =>
          (v.cluster.patches = {
            all: [{ machine: { sysctls: { "net.core.somaxconn": "65535" } } }],
          }),
      )
    ).recorder;
    const vms = (r: Recorder) => r.ofType(T.vm).map((v: RecordedResource) => v.inputs);
    assert.deepEqual(vms(after), vms(before));
    const applied = (r: Recorder) =>
      r.named("demo-cp-1-config").inputs.machineConfigurationInput as string;
    assert.notEqual(applied(after), applied(before));
    assert.ok(applied(after).includes("net.core.somaxconn"));
  });

  it("names the image file after the cluster, so two stacks on one Proxmox host never share one", async () => {
    const ours = (await run(() => undefined)).recorder;
    const theirs = (await run((v) => (v.cluster.name = "other"))).recorder;
    const files = (r: Recorder) => r.ofType(T.image).map((f) => f.inputs.fileName as string);
    for (const name of files(ours)) {
      assert.match(name, /^talos-demo-v1\.13\.9-[0-9a-f]{12}-nocloud-amd64\.qcow2$/);
    }
    for (const name of files(theirs)) assert.match(name, /^talos-other-v1\.13\.9-/);
    // The file name is the only thing that differs: same schematic, version and datastore.
    assert.deepEqual(
      files(theirs).map((f) => f.replace("talos-other-", "talos-demo-")),
      files(ours),
    );
  });

  it("renames the file of an existing stack without touching its VMs: they ignore their image", async () => {
    // The resources keep their names (the engine replaces the File, its fileName being new); a VM's
    // disk names the file by id, in an ignored attribute, so the VMs' inputs otherwise stay as they were.
    const { recorder } = await run(() => undefined);
    assert.deepEqual(
      recorder
        .ofType(T.image)
        .map((f) => f.name)
        .sort(),
      ["demo-talos-image-pve1", "demo-talos-image-pve2", "demo-talos-image-pve3"],
    );
    for (const vm of recorder.ofType(T.vm)) {
      const disk = vm.inputs.disks[0];
      const file = recorder.ofType(T.image).find((f) => f.inputs.nodeName === vm.inputs.nodeName)!;
      assert.equal(disk.importFrom, `local:import/${file.inputs.fileName}`);
      assert.ok(vm.options.ignoreChanges.includes("disks[0].importFrom"));
      assert.ok(vm.options.ignoreChanges.includes("disks[0].fileId"));
    }
  });

  it("downloads a new image for a new Talos version without replacing the VMs' disks", async () => {
    const before = (await run(() => undefined)).recorder;
    const after = (await run((v) => (v.cluster.talosVersion = "v1.13.10"))).recorder;
    const withoutImage = (r: Recorder) =>
      r.ofType(T.vm).map((v) => ({
        ...v.inputs,
        disks: v.inputs.disks.map((d: any) => ({ ...d, fileId: "-", importFrom: "-" })),
      }));
    assert.deepEqual(withoutImage(after), withoutImage(before));
    assert.notEqual(
      after.ofType(T.image)[0].inputs.fileName,
      before.ofType(T.image)[0].inputs.fileName,
    );
    assert.ok(
      after.ofType(T.vm).every((v) => v.options.ignoreChanges.includes("disks[0].importFrom")),
    );
    assert.equal(after.ofType(T.secrets)[0].inputs.talosVersion, "v1.13.10");
  });
});
