// How each layer's validation gets its values: from the Pulumi runtime (which keys the engine marked
// secret) or from a stack file read from disk (`secure:` values), the same shape either way.
import * as pulumi from "@pulumi/pulumi";
import { strict as assert } from "node:assert";
import { parse } from "yaml";
import { StackConfigError } from "../components/config/problems";
import { isSecretConfigKey, runtimeStackValues } from "../components/config/runtimeValues";
import { decodeConfigValue, stackFileValues } from "../components/config/stackValues";
import { validatePlatformConfig } from "../components/config/validate";
import { proxmoxCluster } from "./fixtures";
import { setupRun } from "./harness";

describe("stack values for validation", () => {
  it("tells secret keys from plain ones the way the engine passes them (PULUMI_CONFIG_SECRET_KEYS)", async () => {
    await setupRun(
      { cluster: { name: "x" }, proxmoxApiToken: "plain" },
      {
        secrets: { fluxDeployKey: "FAKE-SECRET-key" },
      },
    );
    // The SDK exports this at run time although its type declarations mark it internal.
    assert.equal(typeof (pulumi.runtime as any).isConfigSecret, "function");
    assert.equal(isSecretConfigKey("talos-platform:fluxDeployKey"), true);
    assert.equal(isSecretConfigKey("talos-platform:proxmoxApiToken"), false);
    const values = runtimeStackValues("talos-platform");
    assert.deepEqual([...values.presentKeys].sort(), [
      "cluster",
      "fluxDeployKey",
      "proxmoxApiToken",
    ]);
    assert.deepEqual([...values.secretKeys], ["fluxDeployKey"]);
    assert.deepEqual(values.values, { cluster: { name: "x" }, proxmoxApiToken: "plain" });
  });

  it("keeps text that is not JSON as text, so a scalar section is reported as such", () => {
    assert.deepEqual(decodeConfigValue('{"a":1}'), { a: 1 });
    assert.equal(decodeConfigValue("demo"), "demo");
    assert.equal(decodeConfigValue("5"), 5);
  });

  it("reads a stack file's config without the engine: secure values are secret, other namespaces ignored", () => {
    const file = parse(`
config:
  talos-platform:cluster: { name: demo }
  talos-platform:proxmoxApiToken:
    secure: AAABAKo1
  talos-platform:fluxDeployKey: plain-text-key
  nodes: []
  proxmoxve:endpoint: https://pve1.example.net:8006/
`) as { config: Record<string, unknown> };
    const values = stackFileValues(file.config, "talos-platform");
    assert.deepEqual([...values.presentKeys].sort(), [
      "cluster",
      "fluxDeployKey",
      "nodes",
      "proxmoxApiToken",
    ]);
    assert.deepEqual([...values.secretKeys], ["proxmoxApiToken"]);
    assert.equal(
      "proxmoxApiToken" in values.values,
      false,
      "a secret's ciphertext is not passed on",
    );
  });

  it("validates a stack file read from disk with the same function the program uses", () => {
    const config = Object.fromEntries(
      Object.entries(proxmoxCluster()).map(([key, value]) => [`talos-platform:${key}`, value]),
    );
    config["talos-platform:proxmoxApiToken"] = "root@pam!pulumi=FAKE-SECRET";
    const { values, presentKeys, secretKeys } = stackFileValues(config, "talos-platform");
    assert.throws(
      () => validatePlatformConfig({ ...values, presentKeys, secretKeys }, "Pulumi.staging.yaml"),
      (error: StackConfigError) => {
        assert.deepEqual(error.problems, [
          "proxmoxApiToken: is a credential in plain text (value not shown). Run `pulumi config set --secret proxmoxApiToken --stack staging` and enter it when asked, or leave it out for the CLI to supply (docs/credentials.md)",
        ]);
        assert.ok(!error.message.includes("FAKE-SECRET"));
        return true;
      },
    );
    config["talos-platform:proxmoxApiToken"] = { secure: "AAABAKo1" };
    const secret = stackFileValues(config, "talos-platform");
    assert.doesNotThrow(() =>
      validatePlatformConfig(
        { ...secret.values, presentKeys: secret.presentKeys, secretKeys: secret.secretKeys },
        "Pulumi.staging.yaml",
      ),
    );
  });
});
