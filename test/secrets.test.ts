import { strict as assert } from "node:assert";
import { mixedCluster } from "./fixtures";
import { isSecret, runFoundation } from "./harness";
import { FAKE_SECRET_MARKER, Recorder } from "./mocks";

/** Paths (dotted) of every string under `value` that contains fake key material. */
function sensitivePaths(value: unknown, path = ""): string[] {
  if (typeof value === "string") return value.includes(FAKE_SECRET_MARKER) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => sensitivePaths(v, `${path}[${i}]`));
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) => sensitivePaths(v, path ? `${path}.${k}` : k));
  }
  return [];
}

const coveredBy = (path: string, secretPaths: string[]) =>
  secretPaths.some((s) => path === s || path.startsWith(`${s}.`) || path.startsWith(`${s}[`));

describe("secrets stay secret", () => {
  let recorder: Recorder;
  let outputs: any;
  before(
    async () =>
      ({ recorder, outputs } = await runFoundation(mixedCluster(), {
        secrets: { proxmoxApiToken: `root@pam!ci=${FAKE_SECRET_MARKER}-pve` },
      })),
  );

  it("sends every key, token and machine config to providers only as secrets", () => {
    let checked = 0;
    for (const resource of recorder.resources) {
      for (const path of sensitivePaths(resource.inputs)) {
        checked++;
        assert.ok(
          coveredBy(path, resource.secretPaths),
          `${resource.name}: input ${path} carries key material but is not secret`,
        );
      }
    }
    assert.ok(checked >= 10, `expected key material in many inputs, saw ${checked}`);
  });

  it("marks the Talos provider's sensitive outputs secret in state", () => {
    const options = (type: string) =>
      recorder.ofType(type)[0].options.additionalSecretOutputs.slice().sort();
    assert.deepEqual(options("talos:machine/secrets:Secrets"), [
      "clientConfiguration",
      "machineSecrets",
    ]);
    assert.deepEqual(options("talos:machine/configurationApply:ConfigurationApply"), [
      "clientConfigurationWo",
      "machineConfiguration",
      "machineConfigurationInput",
      "machineConfigurationInputWo",
    ]);
    assert.deepEqual(options("talos:cluster/kubeconfig:Kubeconfig"), ["kubeconfigRaw"]);
  });

  it("exports every output that holds key material as a secret", async () => {
    assert.equal(await isSecret(outputs.kubeconfig), true);
    assert.equal(await isSecret(outputs.talosconfig), true);
    assert.equal(await isSecret(outputs.machineConfigurations), true);
    const sensitive: string[] = [];
    for (const [key, value] of Object.entries(outputs)) {
      const plain = JSON.stringify((await (value as any)?.promise?.()) ?? value);
      if (!plain.includes(FAKE_SECRET_MARKER)) continue;
      sensitive.push(key);
      assert.equal(await isSecret(value as any), true, `output ${key} leaks key material`);
    }
    assert.deepEqual(sensitive.sort(), ["kubeconfig", "machineConfigurations", "talosconfig"]);
  });
});
