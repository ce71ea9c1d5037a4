// Every stack file in the repository, whatever it holds: the root's, app/'s and bootstrap/'s, and the
// examples (alone and with the foundation services added). Each must pass its layer's validation and
// run its layer's program under mocks. Nothing here pins a value: an operator's valid edits of these
// files keep the tests green. Tests of particular behaviour use the copies in test/fixtures/stacks.
import { publishedObject } from "../components/gcp/publishedValues";
import { strict as assert } from "node:assert";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { CREDENTIALS } from "../automation/credentials";
import type { LayerName } from "../automation/layers";
import { validateStackConfig, isSecureValue } from "../automation/readiness";
import { isExampleValuesWarning } from "../components/config/rules/examples";
import { stackFileValues } from "../components/config/stackValues";
import { PLATFORMS } from "../components/spec/types";
import { ROOT, STACK_SECRETS, readStackFile, resolveAll, runFoundation, setupRun } from "./harness";
import { Recorder } from "./mocks";

/** A stack file to check: which layer reads it, its path, and its `config:` as written. */
interface StackFileCase {
  readonly layer: LayerName;
  readonly project: string;
  readonly file: string;
  readonly env: string;
  readonly config: Record<string, unknown>;
}

const LAYER_DIRS: Readonly<Record<LayerName, string>> = {
  foundation: ".",
  bootstrap: "bootstrap",
  app: "app",
};

function projectOf(dir: string): string {
  return (parse(readFileSync(path.join(ROOT, dir, "Pulumi.yaml"), "utf8")) as { name: string })
    .name;
}

function stackFiles(layer: LayerName, dir: string, project: string): StackFileCase[] {
  return readdirSync(path.join(ROOT, dir))
    .map((name) => /^Pulumi\.(.+)\.ya?ml$/.exec(name))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => {
      const file = path.join(dir, match[0]);
      const content = (parse(readFileSync(path.join(ROOT, file), "utf8")) ?? {}) as {
        config?: Record<string, unknown>;
      };
      return { layer, project, file, env: match[1], config: content.config ?? {} };
    });
}

const FOUNDATION = projectOf(".");
const SERVICES = parse(
  readFileSync(path.join(ROOT, "examples", "foundation-services.yaml"), "utf8"),
) as Record<string, unknown>;
const examples = stackFiles("foundation", "examples", FOUNDATION);

/** Every stack file of the repository, and each example with the foundation services added. */
const CASES: StackFileCase[] = [
  ...(Object.keys(LAYER_DIRS) as LayerName[]).flatMap((layer) =>
    stackFiles(layer, LAYER_DIRS[layer], projectOf(LAYER_DIRS[layer])),
  ),
  ...examples,
  ...examples.map((example) => ({
    ...example,
    file: `${example.file} + examples/foundation-services.yaml`,
    config: { ...example.config, ...SERVICES },
  })),
];

/** Fake values for every credential of the layer, as the CLI would hand them to the program. */
function credentials(layer: LayerName): Record<string, string> {
  return Object.fromEntries(
    CREDENTIALS[layer].map((c) => [c.configKey, `FAKE-SECRET-${c.configKey}`]),
  );
}

/** The plain values and the program's secrets of a case (its own encrypted keys stand in as fakes). */
function inputs(stack: StackFileCase) {
  const { values, presentKeys, secretKeys } = stackFileValues(stack.config, stack.project);
  // The file's own encrypted keys stand in as fakes; the rest come "from the environment".
  const secrets: Record<string, string> = {};
  for (const key of secretKeys) secrets[key] = `FAKE-SECRET-${key}`;
  for (const [key, value] of Object.entries(credentials(stack.layer))) {
    if (!presentKeys.has(key)) secrets[key] = value;
  }
  return { values, presentKeys, secrets };
}

describe("every stack file in the repository", () => {
  it("finds the root's, app/'s and bootstrap/'s stack files and at least three examples", () => {
    const layers = new Set(CASES.map((c) => c.layer));
    assert.ok(layers.has("foundation"));
    assert.ok(examples.length >= 3, examples.map((e) => e.file).join(", "));
  });

  for (const stack of CASES) {
    describe(stack.file, () => {
      it("passes its layer's validation, given the credentials the CLI would find", () => {
        const { values, presentKeys, secrets } = inputs(stack);
        const {
          problems,
          warnings,
          notes = [],
        } = validateStackConfig({
          layer: stack.layer,
          env: stack.env,
          project: stack.project,
          stackFile: stack.file,
          values,
          presentKeys: new Set([...presentKeys, ...Object.keys(secrets)]),
          secretKeys: new Set(Object.keys(secrets)),
        });
        // The shipped stacks hold documentation addresses until an operator replaces them, so the
        // example-values warning may come and go with their edits.
        assert.deepEqual(
          { problems, warnings: warnings.filter((w) => !isExampleValuesWarning(w)) },
          { problems: [], warnings: [] },
        );
        // Only what to do before up: the ISO of a bare-metal node.
        for (const note of notes) assert.match(note, /^boot before up .*\.iso$/);
      });

      if (stack.layer === "foundation") {
        it("still validates once upgrade talos moved talosVersion to Talos 1.14 (patches are the contract's)", () => {
          const { values, presentKeys, secrets } = inputs(stack);
          const cluster = values.cluster as { talosVersion?: string; configContract?: string };
          // Only a stack that pins its contract may move to Talos 1.14 (the versions rule says why).
          if (cluster.configContract === undefined) return;
          const upgraded = { ...values, cluster: { ...cluster, talosVersion: "v1.14.1" } };
          assert.deepEqual(
            validateStackConfig({
              layer: stack.layer,
              env: stack.env,
              project: stack.project,
              stackFile: stack.file,
              values: upgraded,
              presentKeys: new Set([...presentKeys, ...Object.keys(secrets)]),
              secretKeys: new Set(Object.keys(secrets)),
            }).problems,
            [],
          );
        });
      }

      it("holds no credential in plain text", () => {
        for (const credential of Object.values(CREDENTIALS).flat()) {
          const value = stack.config[`${stack.project}:${credential.configKey}`];
          assert.ok(
            value === undefined || isSecureValue(value),
            `${credential.configKey} must be set with pulumi config set --secret`,
          );
        }
      });

      it("runs its layer's program under mocks", async () => {
        const { values, secrets } = inputs(stack);
        if (stack.layer === "foundation") {
          const { recorder, resolved } = await runFoundation(values, {
            stack: stack.env,
            secrets,
          });
          // One machine config per node of the file, each node's address exported.
          const nodes = (values.nodes as { name: string }[]).map((n) => n.name).sort();
          assert.deepEqual(
            [
              ...Object.keys(resolved.nodes.controlplane),
              ...Object.keys(resolved.nodes.worker),
            ].sort(),
            nodes,
          );
          assert.equal(recorder.ofType("talos:machine/secrets:Secrets").length, 1);
          assert.equal(recorder.ofType("talos:machine/bootstrap:Bootstrap").length, 1);
        } else if (stack.layer === "bootstrap") {
          const recorder = await setupRun(values, {
            project: stack.project,
            stack: stack.env,
            secrets,
          });
          const { bootstrapLayer } = await import("../components/bootstrap");
          const outputs = await resolveAll(bootstrapLayer());
          await recorder.settled();
          const name = (values.stateBucket as { name: string }).name;
          assert.equal(outputs.backendUrl, `gs://${name}`);
        } else {
          const recorder = new Recorder();
          const reference =
            (values.foundationStack as string | undefined) ??
            `organization/${FOUNDATION}/${stack.env}`;
          const foundationValues = {
            clusterName: stack.env,
            endpoint: "https://api.example.net:6443",
            kubernetesCaCertificate: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n",
          };
          recorder.behaviour.stackOutputs = {
            [reference]: { ...foundationValues, kubeconfig: "FAKE-SECRET-kubeconfig" },
          };
          // The example app stacks read what the foundation publishes in the gs:// bucket.
          const published = publishedObject(
            String(values.backend ?? ""),
            reference.split("/").pop()!,
          );
          if (published) {
            recorder.behaviour.bucketObjects = {
              [`${published.bucket}/${published.name}`]: JSON.stringify(foundationValues),
            };
          }
          await setupRun(values, { recorder, project: stack.project, stack: stack.env, secrets });
          const { appLayer } = await import("../components/app");
          await resolveAll(appLayer());
          await recorder.settled();
          if (values.foundationSource === "published") {
            assert.equal(recorder.ofType("pulumi:pulumi:StackReference").length, 0);
            assert.equal(
              recorder.invokesOf("gcp:storage/getBucketObjectContent:getBucketObjectContent")[0]
                .inputs.name,
              published!.name,
            );
          } else {
            assert.equal(recorder.ofType("pulumi:pulumi:StackReference")[0].inputs.name, reference);
          }
        }
      });
    });
  }
});

describe("the projects", () => {
  it("the foundation's Pulumi.yaml describes every platform; bootstrap's declares every key its program reads", () => {
    const foundation = parse(readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8"));
    for (const platform of PLATFORMS) {
      assert.match(foundation.config.nodes.description, new RegExp(`\\b${platform}\\b`), platform);
    }
    assert.match(foundation.description, /Proxmox.*OCI.*OpenStack.*bare metal/);
    const bootstrap = parse(readFileSync(path.join(ROOT, "bootstrap", "Pulumi.yaml"), "utf8"));
    for (const key of ["gcp", "stateBucket", "secretsKey"]) {
      assert.ok(bootstrap.config[key]?.description, `bootstrap/Pulumi.yaml declares ${key}`);
    }
  });

  it("every dependency's install script is reviewed in package.json's allowScripts", () => {
    const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const { allowScripts } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
    const withScripts = Object.entries(lock.packages)
      .filter(([location, entry]) => location !== "" && entry.hasInstallScript === true)
      .map(([location]) => location.slice(location.lastIndexOf("node_modules/") + 13));
    assert.ok(withScripts.length > 0);
    for (const name of withScripts) assert.ok(name in allowScripts, `${name} not reviewed`);
  });

  it("each layer's Pulumi.yaml is a nodejs project running its compiled program, config keys described", () => {
    for (const dir of Object.values(LAYER_DIRS)) {
      const project = parse(readFileSync(path.join(ROOT, dir, "Pulumi.yaml"), "utf8"));
      // program.js builds when stale and runs dist/; ts-node must not run (docs/development.md).
      assert.deepEqual(project.runtime, { name: "nodejs", options: { typescript: false } }, dir);
      assert.equal(project.main, "program.js", dir);
      assert.ok(existsSync(path.join(ROOT, dir, "program.js")), `${dir}/program.js`);
      for (const [key, declared] of Object.entries(project.config ?? {})) {
        const description = (declared as { description?: string }).description ?? "";
        assert.ok(description.length > 40, `${dir}/Pulumi.yaml: ${key} lacks a description`);
      }
    }
  });
});

const VM = "proxmoxve:index/vmLegacy:VmLegacy";
const APPLY = "talos:machine/configurationApply:ConfigurationApply";

describe("the staging and prod stacks as shipped (test/fixtures/stacks)", () => {
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
    // Prod rotates kubelet serving certificates: its control planes install the CSR approver.
    const approver = /kubelet-serving-cert-approver\/v[\d.]+\/deploy\/standalone-install\.yaml/;
    for (const invoke of recorder.invokesOf("talos:machine/getConfiguration:getConfiguration")) {
      const patches = (invoke.inputs.configPatches as string[]).join("\n");
      if (invoke.inputs.machineType === "controlplane") assert.match(patches, approver);
      else assert.doesNotMatch(patches, approver);
    }
  });
});

describe("the examples", () => {
  it("use documentation address ranges and example names only", () => {
    for (const example of examples) {
      const text = readFileSync(path.join(ROOT, example.file), "utf8");
      assert.doesNotMatch(
        // Talos' default pod and service subnets are not anyone's addresses.
        text.replace(/\b10\.244\.0\.0\/16\b|\b10\.96\.0\.0\/12\b/g, ""),
        /\b(10|172\.(1[6-9]|2\d|3[01])|192\.168)\.\d+\.\d+/,
        `${example.file} uses RFC 5737 / RFC 3849 ranges`,
      );
    }
  });
});
