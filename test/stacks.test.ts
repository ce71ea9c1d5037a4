import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { readStackFile, ROOT, runFoundation, STACK_SECRETS } from "./harness";

const VM = "proxmoxve:index/vmLegacy:VmLegacy";
const APPLY = "talos:machine/configurationApply:ConfigurationApply";

describe("the repository's stack files", () => {
  it("Pulumi.yaml is a nodejs project (the compiled program) whose required keys are described", () => {
    const project = parse(readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8"));
    assert.equal(project.name, "talos-platform");
    assert.deepEqual(project.runtime, { name: "nodejs", options: { typescript: false } });
    assert.equal(project.main, "program.js");
    for (const key of ["cluster", "nodes"])
      assert.ok(project.config[key].description.length > 40, `${key} lacks a description`);
  });

  it("staging runs three control-plane VMs, one on each of three Proxmox hosts, that also run workloads", async () => {
    const { recorder, resolved } = await runFoundation(readStackFile("staging"), {
      stack: "staging",
      secrets: STACK_SECRETS,
    });
    const vms = recorder.ofType(VM);
    assert.equal(vms.length, 3);
    assert.deepEqual(vms.map((v) => v.inputs.nodeName).sort(), ["pve1", "pve2", "pve3"]);
    assert.deepEqual(Object.keys(resolved.nodes.controlplane).sort(), [
      "stg-cp-1",
      "stg-cp-2",
      "stg-cp-3",
    ]);
    assert.deepEqual(resolved.nodes.worker, {});
    assert.equal(recorder.ofType(APPLY).length, 3);
    assert.equal(recorder.ofType("talos:machine/bootstrap:Bootstrap").length, 1);
    const patches = recorder
      .invokesOf("talos:machine/getConfiguration:getConfiguration")[0]
      .inputs.configPatches.join("\n");
    assert.match(patches, /allowSchedulingOnControlPlanes: true/);
    assert.equal(resolved.endpoint, "https://api.staging.example.net:6443");
  });

  it("prod runs the same components larger, with workers on Proxmox, bare metal, OCI and OpenStack", async () => {
    const { recorder, resolved } = await runFoundation(readStackFile("prod"), {
      stack: "prod",
      secrets: STACK_SECRETS,
    });
    assert.deepEqual(Object.keys(resolved.nodes.controlplane).sort(), [
      "prod-cp-1",
      "prod-cp-2",
      "prod-cp-3",
    ]);
    assert.deepEqual(Object.keys(resolved.nodes.worker).sort(), [
      "prod-edge-1",
      "prod-oci-1",
      "prod-oci-2",
      "prod-os-1",
      "prod-os-2",
      "prod-worker-1",
      "prod-worker-2",
    ]);
    const vms = recorder.ofType(VM);
    assert.equal(vms.length, 5);
    assert.deepEqual(
      vms
        .filter((v) => v.inputs.tags.includes("controlplane"))
        .map((v) => v.inputs.nodeName)
        .sort(),
      ["pve1", "pve2", "pve3"],
    );
    assert.ok(vms.every((v) => v.inputs.memory.dedicated >= 8192));
    assert.equal(recorder.named("prod-prod-edge-1-config").inputs.node, "2001:db8:300::31");
    assert.equal(recorder.ofType("oci:Core/instance:Instance").length, 2);
    assert.equal(recorder.ofType("openstack:compute/instance:Instance").length, 2);
    assert.equal(
      recorder.ofType(APPLY).length,
      11,
      "every node takes pushed config changes; the edge node's first push goes to its maintenance address",
    );
  });

  it("holds no credentials in plain text", () => {
    for (const stack of ["staging", "prod"]) {
      const text = readFileSync(path.join(ROOT, `Pulumi.${stack}.yaml`), "utf8");
      assert.doesNotMatch(
        text,
        /(apiToken|password|secret|privateKey)\s*:/i,
        `Pulumi.${stack}.yaml`,
      );
      assert.doesNotMatch(
        // Talos' default pod and service subnets are not anyone's addresses.
        text.replace(/\b10\.244\.0\.0\/16\b|\b10\.96\.0\.0\/12\b/g, ""),
        /\b(10|172\.(1[6-9]|2\d|3[01])|192\.168)\.\d+\.\d+/,
        `Pulumi.${stack}.yaml uses documentation ranges only`,
      );
    }
  });
});
