// The program's half of a CA rotation: each node's config rendered for its phase (the issuing CA
// overlaid on the machine secrets, the accepted ones patched in), the client credentials of the
// talosconfig and of the provider's calls, and the new CA's key kept secret.
import { strict as assert } from "node:assert";
import { parse } from "yaml";
import type { CaRotationRecord } from "../components/spec/types";
import { clone, proxmoxCluster } from "./fixtures";
import { isSecret, runFoundation, type StackValues } from "./harness";
import { FAKE_SECRET_MARKER, type Recorder } from "./mocks";

/** Dotted paths of every string under `value` holding fake key material. */
function keyPaths(value: unknown, path = ""): string[] {
  if (typeof value === "string") return value.includes(FAKE_SECRET_MARKER) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => keyPaths(v, `${path}[${i}]`));
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) => keyPaths(v, path ? `${path}.${k}` : k));
  }
  return [];
}

const GET_CONFIGURATION = "talos:machine/getConfiguration:getConfiguration";
const TALOSCONFIG = "talos:client/getConfiguration:getConfiguration";
const SECRETS = "talos:machine/secrets:Secrets";
const OLD_OS = "-----BEGIN os CERTIFICATE-----";
const NEW_OS = "-----BEGIN os demo-talos-ca-1 CERTIFICATE-----";

function rotating(talos?: CaRotationRecord, kubernetes?: CaRotationRecord): StackValues {
  const values = clone(proxmoxCluster());
  (values.cluster as Record<string, unknown>).caRotation = {
    ...(talos ? { talos } : {}),
    ...(kubernetes ? { kubernetes } : {}),
  };
  return values;
}

function configOf(recorder: Recorder, node: string) {
  const invoke = recorder
    .invokesOf(GET_CONFIGURATION)
    .find((i) => i.inputs.configPatches.some((p: string) => p.includes(`hostname: ${node}\n`)));
  assert.ok(invoke, `no config generated for ${node}`);
  return invoke;
}

/** The CAs a node's config accepts beside its issuing one, by kind. */
function acceptedOf(recorder: Recorder, node: string) {
  const patches = configOf(recorder, node)
    .inputs.configPatches.map((p: string) => parse(p) as Record<string, any>)
    .filter((p: Record<string, any>) => p.machine?.acceptedCAs || p.cluster?.acceptedCAs);
  return {
    machine: patches.flatMap((p: any) => p.machine?.acceptedCAs ?? []).map((c: any) => c.crt),
    cluster: patches.flatMap((p: any) => p.cluster?.acceptedCAs ?? []).map((c: any) => c.crt),
  };
}

const osCaOf = (recorder: Recorder, node: string) =>
  configOf(recorder, node).inputs.machineSecrets.certs.os as { cert: string; key: string };

describe("CA rotation in the program", () => {
  it("outside a rotation: one set of machine secrets and no accepted CAs", async () => {
    const { recorder } = await runFoundation(proxmoxCluster());
    assert.deepEqual(
      recorder.ofType(SECRETS).map((r) => r.name),
      ["demo-secrets"],
    );
    assert.deepEqual(acceptedOf(recorder, "cp-1"), { machine: [], cluster: [] });
  });

  describe("talos, generated", () => {
    let recorder: Recorder;
    before(async () => {
      ({ recorder } = await runFoundation(rotating({ generation: 1, phase: "generated" })));
    });

    it("creates the new CA's machine secrets, secret, with the contract pinned, and changes no node", () => {
      const next = recorder.named("demo-talos-ca-1");
      assert.equal(next.type, SECRETS);
      assert.equal(next.inputs.talosVersion, "v1.13.9");
      assert.deepEqual(next.options.additionalSecretOutputs.slice().sort(), [
        "clientConfiguration",
        "machineSecrets",
      ]);
      assert.deepEqual(next.options.ignoreChanges, ["talosVersion"]);
      // The old CA still issues: the new one's resource is not yet the one to protect.
      assert.equal(next.options.protect, false);
      for (const node of ["cp-1", "cp-2", "cp-3"]) {
        assert.deepEqual(acceptedOf(recorder, node), { machine: [], cluster: [] });
        assert.ok(osCaOf(recorder, node).cert.startsWith(OLD_OS));
      }
    });
  });

  describe("talos, accepted on cp-1 so far", () => {
    let recorder: Recorder;
    before(async () => {
      ({ recorder } = await runFoundation(
        rotating({ generation: 1, phase: "accepted", nodes: ["cp-1"] }),
      ));
    });

    it("lists the new CA in cp-1's machine.acceptedCAs (certificate only); the others not yet", () => {
      const accepted = acceptedOf(recorder, "cp-1");
      assert.equal(accepted.machine.length, 1);
      assert.ok(accepted.machine[0].startsWith(NEW_OS));
      assert.deepEqual(accepted.cluster, []);
      assert.deepEqual(acceptedOf(recorder, "cp-2"), { machine: [], cluster: [] });
      assert.ok(osCaOf(recorder, "cp-1").cert.startsWith(OLD_OS));
    });

    it("keeps the old client credentials in the talosconfig", () => {
      const [talosconfig] = recorder.invokesOf(TALOSCONFIG);
      assert.match(talosconfig.inputs.clientConfiguration.clientCertificate, /TALOS CLIENT-----/);
      assert.match(talosconfig.inputs.clientConfiguration.caCertificate, /TALOS CA/);
    });
  });

  describe("talos, issuing on cp-1 so far", () => {
    let recorder: Recorder;
    let outputs: any;
    before(async () => {
      ({ recorder, outputs } = await runFoundation(
        rotating({ generation: 1, phase: "issuing", nodes: ["cp-1"] }),
      ));
    });

    it("makes the new CA (with its key) cp-1's machine.ca and accepts the old one; cp-2 is one phase behind", () => {
      const cp1 = osCaOf(recorder, "cp-1");
      assert.ok(cp1.cert.startsWith(NEW_OS));
      assert.match(cp1.key, /os-demo-talos-ca-1-key/);
      const accepted = acceptedOf(recorder, "cp-1");
      assert.equal(accepted.machine.length, 1);
      assert.ok(accepted.machine[0].startsWith(OLD_OS));
      assert.ok(osCaOf(recorder, "cp-2").cert.startsWith(OLD_OS));
      assert.ok(acceptedOf(recorder, "cp-2").machine[0].startsWith(NEW_OS));
    });

    it("issues the talosconfig from the new CA, trusting both CAs' server certificates", () => {
      const [talosconfig] = recorder.invokesOf(TALOSCONFIG);
      const client = talosconfig.inputs.clientConfiguration;
      assert.match(client.clientCertificate, /TALOS CLIENT demo-talos-ca-1/);
      const bundle = Buffer.from(client.caCertificate, "base64").toString("utf8");
      assert.ok(bundle.includes(NEW_OS) && bundle.includes(OLD_OS), bundle);
      // The provider's own calls use the same credentials.
      const apply = recorder.named("demo-cp-2-config");
      assert.deepEqual(apply.inputs.clientConfiguration, client);
    });

    it("protects the new CA's machine secrets now that it issues", () => {
      assert.equal(recorder.named("demo-talos-ca-1").options.protect, true);
      assert.equal(recorder.named("demo-secrets").options.protect, true);
    });

    it("sends the new client key to the provider only as a secret, and every input with key material is secret", () => {
      const apply = recorder.named("demo-cp-1-config");
      assert.match(apply.inputs.clientConfiguration.clientKey, /talos-client-key-demo-talos-ca-1/);
      assert.ok(
        apply.secretPaths.some((p) => "clientConfiguration.clientKey".startsWith(p)),
        apply.secretPaths.join(),
      );
      for (const resource of recorder.resources) {
        for (const path of keyPaths(resource.inputs)) {
          assert.ok(
            resource.secretPaths.some((s) => path === s || path.startsWith(`${s}.`)),
            `${resource.name}: ${path} carries key material but is not secret`,
          );
        }
      }
    });

    it("exports the talosconfig as a secret", async () => {
      assert.equal(await isSecret(outputs.talosconfig), true);
    });

    it("keeps the bootstrap guard on the cluster's own CA", () => {
      const bootstrap = recorder.named("demo-bootstrap");
      assert.ok(bootstrap.options.ignoreChanges.includes("clientConfiguration"));
    });
  });

  describe("talos, finished", () => {
    let recorder: Recorder;
    before(async () => {
      ({ recorder } = await runFoundation(rotating({ generation: 1, phase: "removed" })));
    });

    it("renders the new CA alone: no accepted CAs, the new client credentials as the provider made them", () => {
      for (const node of ["cp-1", "cp-2", "cp-3"]) {
        assert.ok(osCaOf(recorder, node).cert.startsWith(NEW_OS));
        assert.deepEqual(acceptedOf(recorder, node), { machine: [], cluster: [] });
      }
      const [talosconfig] = recorder.invokesOf(TALOSCONFIG);
      assert.equal(talosconfig.inputs.clientConfiguration.caCertificate.startsWith(NEW_OS), true);
      assert.deepEqual(
        recorder
          .ofType(SECRETS)
          .map((r) => r.name)
          .sort(),
        ["demo-secrets", "demo-talos-ca-1"],
      );
    });

    it("a second rotation keeps generation 1 until its CA left every node", async () => {
      const { recorder: second } = await runFoundation(
        rotating({ generation: 2, phase: "removed", nodes: ["cp-1"] }),
      );
      assert.deepEqual(
        second
          .ofType(SECRETS)
          .map((r) => [r.name, r.options.protect])
          .sort(),
        [
          ["demo-secrets", true],
          ["demo-talos-ca-1", false],
          ["demo-talos-ca-2", true],
        ],
      );
    });
  });

  describe("kubernetes, issuing on cp-1 so far", () => {
    let recorder: Recorder;
    before(async () => {
      ({ recorder } = await runFoundation(
        rotating(undefined, { generation: 1, phase: "issuing", nodes: ["cp-1"] }),
      ));
    });

    it("makes the new Kubernetes CA cp-1's cluster.ca and accepts the old one in cluster.acceptedCAs", () => {
      const k8s = configOf(recorder, "cp-1").inputs.machineSecrets.certs.k8s;
      assert.ok(k8s.cert.startsWith("-----BEGIN k8s demo-kubernetes-ca-1 CERTIFICATE-----"));
      const accepted = acceptedOf(recorder, "cp-1");
      assert.deepEqual(accepted.machine, []);
      assert.ok(accepted.cluster[0].startsWith("-----BEGIN k8s CERTIFICATE-----"));
      assert.ok(
        acceptedOf(recorder, "cp-2").cluster[0].startsWith(
          "-----BEGIN k8s demo-kubernetes-ca-1 CERTIFICATE-----",
        ),
      );
      // The Talos CA is left alone.
      assert.ok(osCaOf(recorder, "cp-1").cert.startsWith(OLD_OS));
    });

    it("fetches a new kubeconfig (a new resource) once the new CA issues", () => {
      assert.deepEqual(
        recorder.ofType("talos:cluster/kubeconfig:Kubeconfig").map((r) => r.name),
        ["demo-kubeconfig-1"],
      );
    });
  });
});
