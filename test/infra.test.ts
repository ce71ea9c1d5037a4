// The real-infrastructure paths as registered: how Proxmox gets its image (API or SSH), how config
// changes reach running nodes without taking quorum down, bare metal's first push, kubelet addresses
// and health. What the stack file may ask for: test/config/rules/ (images, quorum, addresses).
import { strict as assert } from "node:assert";
import { parse } from "yaml";
import { PROXMOX_IMAGE_FORMATS } from "../components/nodes/proxmox/imageFormat";
import { clone, mixedCluster, proxmoxCluster } from "./fixtures";
import { runFoundation, StackValues } from "./harness";
import { RecordedResource } from "./mocks";

const T = {
  apply: "talos:machine/configurationApply:ConfigurationApply",
  bootstrap: "talos:machine/bootstrap:Bootstrap",
  image: "proxmoxve:download/file:File",
  vm: "proxmoxve:index/vmLegacy:VmLegacy",
  health: "talos:cluster/getHealth:getHealth",
  talosconfig: "talos:client/getConfiguration:getConfiguration",
  getConfiguration: "talos:machine/getConfiguration:getConfiguration",
};

async function run(base: () => StackValues, change: (v: any) => void, secrets = {}) {
  const values = clone(base());
  change(values);
  return runFoundation(values, { secrets });
}

/** The documents of every patch a node's config was generated with. */
function patchDocuments(recorder: { invokesOf: (t: string) => any[] }, hostname: string) {
  const call = recorder
    .invokesOf(T.getConfiguration)
    .find((i) => i.inputs.configPatches.some((p: string) => p.includes(`hostname: ${hostname}\n`)));
  return (call.inputs.configPatches as string[]).map((p) => parse(p));
}

describe("Proxmox image path", () => {
  const formats: [string, string, string | undefined, RegExp, "importFrom" | "fileId"][] = [
    ["qcow2", "import", undefined, /\.qcow2$/, "importFrom"],
    ["raw", "import", undefined, /\.raw$/, "importFrom"],
    ["raw.zst", "iso", "zst", /\.img$/, "fileId"],
    ["raw.gz", "iso", "gz", /\.img$/, "fileId"],
  ];
  for (const [format, contentType, decompression, fileName, attribute] of formats) {
    it(`asks the Image Factory for nocloud-amd64.${format} and creates the disk with ${attribute}`, async () => {
      const { recorder } = await run(
        proxmoxCluster,
        (v) => {
          v.proxmox.imageFormat = format;
          if (attribute === "fileId") v.proxmox.ssh = { username: "root", agent: true };
        },
        {},
      );
      for (const image of recorder.ofType(T.image)) {
        assert.ok(image.inputs.url.endsWith(`/v1.13.9/nocloud-amd64.${format}`), image.inputs.url);
        assert.equal(image.inputs.contentType, contentType);
        assert.equal(image.inputs.decompressionAlgorithm, decompression);
        assert.match(image.inputs.fileName, fileName);
      }
      for (const vm of recorder.ofType(T.vm)) {
        const disk = vm.inputs.disks[0];
        const other = attribute === "importFrom" ? "fileId" : "importFrom";
        assert.match(disk[attribute], new RegExp(`^local:${contentType}/talos-demo-v1\\.13\\.9-`));
        assert.equal(disk[other], undefined);
      }
    });
  }

  it("knows which formats need SSH: exactly those Proxmox decompresses into iso content", () => {
    assert.deepEqual(
      Object.values(PROXMOX_IMAGE_FORMATS)
        .filter((f) => f.needsSsh)
        .map((f) => [f.format, f.contentType, f.diskAttribute]),
      [
        ["raw.zst", "iso", "fileId"],
        ["raw.gz", "iso", "fileId"],
      ],
    );
  });

  it("gives the provider SSH with the agent, and each host's SSH address", async () => {
    const { recorder } = await run(proxmoxCluster, (v) => {
      v.proxmox.imageFormat = "raw.zst";
      v.proxmox.ssh = { username: "terraform", agent: true };
      v.proxmox.hosts[0].sshAddress = "192.0.2.201";
    });
    // Providers take nested settings as JSON.
    assert.deepEqual(JSON.parse(recorder.named("demo-proxmox-provider").inputs.ssh), {
      username: "terraform",
      agent: true,
      nodes: [{ name: "pve1", address: "192.0.2.201" }],
    });
  });

  it("gives the provider SSH with the private key from the credentials, as a secret", async () => {
    const key =
      "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE-SECRET-ssh\n-----END OPENSSH PRIVATE KEY-----\n";
    const { recorder } = await run(
      proxmoxCluster,
      (v) => {
        v.proxmox.imageFormat = "raw.gz";
        v.proxmox.ssh = { username: "terraform" };
      },
      { proxmoxSshPrivateKey: key },
    );
    const provider = recorder.named("demo-proxmox-provider");
    assert.deepEqual(JSON.parse(provider.inputs.ssh), {
      username: "terraform",
      agent: false,
      privateKey: key,
    });
    assert.ok(provider.secretPaths.some((p) => p === "ssh" || p === "ssh.privateKey"));
  });
});

describe("config changes without quorum loss", () => {
  const applies = (r: { ofType: (t: string) => RecordedResource[] }) => r.ofType(T.apply);

  it("stages changes that need a reboot on every node by default, and applies the rest at once", async () => {
    const { recorder, resolved } = await run(mixedCluster, () => undefined);
    assert.deepEqual(
      [...new Set(applies(recorder).map((a) => a.inputs.applyMode))],
      ["staged_if_needing_reboot"],
    );
    // The outputs say how each node took its config (the mocks resolve to the mode asked for).
    assert.deepEqual(Object.keys(resolved.applyModes).sort(), [
      "cp-1",
      "cp-2",
      "cp-3",
      "metal-1",
      "worker-1",
    ]);
  });

  it("keeps every node's apply independent, so first creation stays parallel", async () => {
    const { recorder } = await run(mixedCluster, (v) => {
      for (let i = 2; i <= 6; i++) {
        v.nodes.push({
          name: `worker-${i}`,
          role: "worker",
          platform: "proxmox",
          network: { addresses: [`192.0.2.${30 + i}/24`], gateway: "192.0.2.1" },
          proxmox: { host: "pve2", vmId: 130 + i },
        });
      }
    });
    const all = applies(recorder);
    assert.equal(all.length, 10);
    const applyUrns = new Set(all.map((a) => a.urn));
    for (const apply of all) {
      assert.deepEqual(
        apply.options.dependencies.filter((d) => applyUrns.has(d)),
        [],
        `${apply.name} waits for another node's apply`,
      );
    }
    for (const node of ["cp-1", "worker-1", "worker-6"]) {
      const apply = recorder.named(`demo-${node}-config`);
      assert.ok(apply.options.dependencies.includes(recorder.named(`demo-${node}-vm`).urn));
    }
  });

  it("checks only Talos and etcd health when Cilium (installed by the operator) is the CNI", async () => {
    const { recorder } = await run(proxmoxCluster, (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.kubeProxy = false;
    });
    assert.equal(recorder.invokesOf(T.health)[0].inputs.skipKubernetesChecks, true);
    const network = patchDocuments(recorder, "cp-1").find((d) => d?.cluster?.network?.cni);
    assert.deepEqual(network.cluster.network.cni, { name: "none" }, "Talos installs no CNI");
  });
});

describe("bare metal: first push to the maintenance-mode address", () => {
  const withMaintenanceAddress = (v: any) => {
    v.nodes[4].baremetal.maintenanceAddress = "2001:db8::a1b2";
  };

  it("pushes the first config to the maintenance address once, never updating that push", async () => {
    const { recorder } = await run(mixedCluster, withMaintenanceAddress);
    const install = recorder.named("demo-metal-1-install");
    assert.equal(install.inputs.node, "2001:db8::a1b2");
    assert.equal(install.inputs.applyMode, "no_reboot");
    assert.equal(install.inputs.onDestroy, undefined);
    assert.deepEqual(install.options.ignoreChanges.slice().sort(), [
      "applyMode",
      "clientConfiguration",
      "endpoint",
      "machineConfigurationInput",
      "node",
      "timeouts",
    ]);
    assert.ok(install.secretPaths.includes("machineConfigurationInput"));
  });

  it("sends every later push, the health check and talosctl to the configured address", async () => {
    const { recorder, resolved } = await run(mixedCluster, withMaintenanceAddress);
    const config = recorder.named("demo-metal-1-config");
    const install = recorder.named("demo-metal-1-install");
    assert.equal(config.inputs.node, "2001:db8::31");
    assert.ok(config.options.dependencies.includes(install.urn));
    assert.ok(
      !config.options.dependencies.some((d) => d.includes("platform:baremetal:Node")),
      "the install push waits for the machine; this one for the install push",
    );
    assert.equal(config.inputs.timeouts.create, "30m", "it installs and reboots first");
    assert.deepEqual(config.inputs.onDestroy, { graceful: true, reboot: true, reset: true });
    assert.ok(recorder.invokesOf(T.talosconfig)[0].inputs.nodes.includes("2001:db8::31"));
    assert.equal(resolved.nodes.worker["metal-1"], "2001:db8::31");
    const health = recorder.invokesOf(T.health)[0].inputs;
    assert.ok(!JSON.stringify(health).includes("a1b2"));
  });

  it("has no install push when the node answers in maintenance mode where it will stay", async () => {
    const { recorder } = await run(mixedCluster, () => undefined);
    assert.equal(
      recorder.resources.some((r) => r.name === "demo-metal-1-install"),
      false,
    );
    assert.equal(recorder.named("demo-metal-1-config").inputs.timeouts.create, "10m");
  });

  it("bootstraps a bare-metal first control plane at its configured address after both pushes", async () => {
    const values: any = mixedCluster();
    values.nodes = [values.nodes[4]];
    values.nodes[0].role = "controlplane";
    values.nodes[0].baremetal.maintenanceAddress = "192.0.2.200";
    delete values.nodes[0].site;
    delete values.cluster.vip;
    delete values.proxmox;
    const { recorder } = await runFoundation(values);
    const bootstrap = recorder.ofType(T.bootstrap)[0];
    assert.equal(bootstrap.inputs.node, "2001:db8::31");
    assert.ok(bootstrap.options.dependencies.includes(recorder.named("demo-metal-1-config").urn));
  });
});

describe("the addresses kubelets report", () => {
  it("pins a multi-address node's kubelet to its address of the service family", async () => {
    const { recorder, resolved } = await run(mixedCluster, () => undefined);
    const pinned = patchDocuments(recorder, "metal-1").find((d) => d?.machine?.kubelet?.nodeIP);
    assert.deepEqual(pinned.machine.kubelet.nodeIP, { validSubnets: ["192.0.2.31/32"] });
    assert.equal(resolved.kubeletAddresses["metal-1"], "192.0.2.31");
    assert.equal(
      patchDocuments(recorder, "cp-1").some((d) => d?.machine?.kubelet?.nodeIP),
      false,
      "a single-address VM is left alone",
    );
  });

  it("pins both families, the primary first, in a dual-stack cluster", async () => {
    const { recorder, resolved } = await run(mixedCluster, (v) => {
      v.cluster.network.podSubnets = ["2001:db8:1000::/56", "10.244.0.0/16"];
      v.cluster.network.serviceSubnets = ["2001:db8:1100::/108", "10.96.0.0/12"];
      for (const node of v.nodes.slice(0, 4))
        node.network.addresses = [
          `2001:db8::${node.network.addresses[0].split(".")[3].split("/")[0]}/64`,
          node.network.addresses[0],
        ];
    });
    const pinned = patchDocuments(recorder, "metal-1").find((d) => d?.machine?.kubelet?.nodeIP);
    assert.deepEqual(pinned.machine.kubelet.nodeIP.validSubnets, [
      "2001:db8::31/128",
      "192.0.2.31/32",
    ]);
    assert.equal(resolved.kubeletAddresses["cp-1"], "2001:db8::11");
    const health = recorder.invokesOf(T.health)[0].inputs;
    assert.deepEqual(health.controlPlaneNodes, ["2001:db8::11", "2001:db8::12", "2001:db8::13"]);
  });
});
