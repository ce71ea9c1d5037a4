// automation/dayTwo/bootTime.ts: the machine-config fields Talos documents as taking effect at boot.
import { strict as assert } from "node:assert";
import { bootTimeChanges, bootTimeFields } from "../../automation/dayTwo/bootTime";
import { generatedConfig } from "./helpers";

/** A node's config with `v1alpha1` additions (indented under the top level) and more documents. */
function config(v1alpha1 = "", ...documents: string[]): string {
  const base = generatedConfig("cp-1", "controlplane", "v1.14.1").replace(
    "cluster:\n  clusterName: staging\n",
    `cluster:\n  clusterName: staging\n${v1alpha1}`,
  );
  return [base.trimEnd(), ...documents].join("\n---\n") + "\n";
}

const changes = (before: string, after: string) =>
  bootTimeChanges(bootTimeFields(before), bootTimeFields(after));

describe("boot-time fields (Talos 1.14's changes that need a reboot)", () => {
  it("finds a change of cluster.etcd, which etcd reads only when it starts", () => {
    assert.deepEqual(
      changes(
        config(),
        config("  etcd:\n    extraArgs:\n      quota-backend-bytes: '8589934592'\n"),
      ),
      ["v1alpha1 cluster.etcd (set since the boot)"],
    );
    assert.deepEqual(
      changes(
        config("  etcd:\n    image: registry.k8s.io/etcd:v3.6.5\n"),
        config("  etcd:\n    image: registry.k8s.io/etcd:v3.7.1\n"),
      ),
      ["v1alpha1 cluster.etcd (changed since the boot)"],
    );
  });

  it("finds a changed, added or removed environment, which running services keep", () => {
    const env = (value: string) =>
      `apiVersion: v1alpha1\nkind: EnvironmentConfig\nvariables:\n  HTTPS_PROXY: ${value}\n`;
    assert.deepEqual(changes(config("", env("http://a")), config("", env("http://b"))), [
      "EnvironmentConfig (changed since the boot)",
    ]);
    assert.deepEqual(changes(config("", env("http://a")), config()), [
      "EnvironmentConfig (removed since the boot)",
    ]);
    assert.deepEqual(changes(config(), config("", env("http://a"))), [
      "EnvironmentConfig (set since the boot)",
    ]);
  });

  it("finds a kernel module removed or with new parameters, but not one added (Talos loads it)", () => {
    const module = (name: string, parameters: string[]) =>
      `apiVersion: v1alpha1\nkind: KernelModuleConfig\nname: ${name}\nparameters: [${parameters.join(", ")}]\n`;
    const booted = config("", module("br_netfilter", []));
    assert.deepEqual(
      changes(booted, config("", module("br_netfilter", []), module("nbd", []))),
      [],
    );
    assert.deepEqual(changes(booted, config("", module("br_netfilter", ["x=1"]))), [
      "KernelModuleConfig br_netfilter (changed since the boot)",
    ]);
    assert.deepEqual(changes(booted, config()), [
      "KernelModuleConfig br_netfilter (removed since the boot)",
    ]);
  });

  it("finds a volume's encryption changed or removed, and workload isolation switched", () => {
    const volume = (slot: string) =>
      `apiVersion: v1alpha1\nkind: VolumeConfig\nname: EPHEMERAL\nencryption:\n  provider: luks2\n  keys:\n    - slot: ${slot}\n      tpm: {}\n`;
    assert.deepEqual(changes(config("", volume("0")), config("", volume("1"))), [
      "VolumeConfig EPHEMERAL encryption (changed since the boot)",
    ]);
    const isolation =
      "apiVersion: v1alpha1\nkind: SecurityProfileConfig\nworkloadIsolation: true\n";
    assert.deepEqual(changes(config(), config("", isolation)), [
      "SecurityProfileConfig workloadIsolation (changed since the boot)",
    ]);
    // workloadIsolation: false is what no document means.
    assert.deepEqual(
      changes(
        config(),
        config("", "apiVersion: v1alpha1\nkind: SecurityProfileConfig\nworkloadIsolation: false\n"),
      ),
      [],
    );
  });

  it("finds nothing in what a running node applies at once: kubelet, labels, the install image", () => {
    const before = config();
    const after = config()
      .replace("v1.14.1\n", "v1.14.2\n")
      .concat(
        "---\napiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.37.1\n",
      );
    assert.deepEqual(changes(before, after), []);
  });

  it("keeps only digests: no value of the config appears in the fields", () => {
    const secret = "aescbc-key-that-must-not-leak";
    const fields = bootTimeFields(config(`  etcd:\n    extraArgs:\n      secret: ${secret}\n`));
    assert.ok(!JSON.stringify(fields).includes(secret));
    assert.ok(Object.values(fields).every((digest) => /^[0-9a-f]{32}$/.test(digest)));
  });
});
