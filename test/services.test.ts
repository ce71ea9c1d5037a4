// The foundation services as registered: OpenBao's unseal key, DNS records, the Flux handoff; and
// the foundation's independence from the app layer. What a stack file may ask of them:
// test/config/rules/services.test.ts.
import { strict as assert } from "node:assert";
import { parse, parseAllDocuments } from "yaml";
import { withRunSecrets } from "./setup/runSecrets";
import { clone, GITHUB_KNOWN_HOSTS, validTalos113, withServices } from "./fixtures";
import { isSecret, readStackFile, runFoundation, STACK_SECRETS } from "./harness";
import { FAKE_SECRET_MARKER, Recorder } from "./mocks";

const SECRETS = { fluxDeployKey: STACK_SECRETS.fluxDeployKey };

describe("foundation services", () => {
  let recorder: Recorder;
  let outputs: any;
  let resolved: any;
  before(
    async () =>
      ({ recorder, outputs, resolved } = await runFoundation(withServices(), { secrets: SECRETS })),
  );

  describe("OpenBao auto-unseal key", () => {
    it("creates a protected key ring and rotating key", () => {
      const ring = recorder.ofType("gcp:kms/keyRing:KeyRing")[0];
      assert.deepEqual(
        [ring.inputs.name, ring.inputs.location, ring.inputs.project, ring.options.protect],
        ["demo-openbao", "europe-west3", "example-homelab", true],
      );
      const key = recorder.ofType("gcp:kms/cryptoKey:CryptoKey")[0];
      assert.deepEqual(
        [key.inputs.name, key.inputs.purpose, key.inputs.rotationPeriod, key.options.protect],
        ["unseal", "ENCRYPT_DECRYPT", "7776000s", true],
      );
      assert.equal(
        key.inputs.keyRing,
        "projects/example-homelab/locations/europe-west3/keyRings/demo-openbao",
      );
    });

    it("grants the unseal service account exactly the roles the gcpckms seal needs, on that key only", () => {
      const account = recorder.ofType("gcp:serviceaccount/account:Account")[0];
      assert.equal(account.inputs.accountId, "demo-openbao-unseal");
      const members = recorder
        .ofType("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
        .map((m) => [m.inputs.role, m.inputs.member, m.inputs.cryptoKeyId]);
      const key =
        "projects/example-homelab/locations/europe-west3/keyRings/demo-openbao/cryptoKeys/unseal";
      const member = "serviceAccount:demo-openbao-unseal@example-homelab.iam.gserviceaccount.com";
      assert.deepEqual(members.sort(), [
        ["roles/cloudkms.cryptoKeyEncrypterDecrypter", member, key],
        ["roles/cloudkms.viewer", member, key],
      ]);
      assert.equal(
        recorder.resources.some(
          (r) => r.type.startsWith("gcp:projects/") || r.type.includes("IAMBinding"),
        ),
        false,
      );
    });

    it("exports the seal stanza values and the account key as a secret JSON", async () => {
      assert.deepEqual(resolved.openbao.seal, {
        project: "example-homelab",
        region: "europe-west3",
        key_ring: "demo-openbao",
        crypto_key: "unseal",
      });
      assert.equal(JSON.parse(resolved.openbao.credentials).type, "service_account");
      assert.equal(await isSecret(outputs.openbao.credentials), true);
      assert.deepEqual(
        recorder.ofType("gcp:serviceaccount/key:Key")[0].options.additionalSecretOutputs,
        ["privateKey"],
      );
    });

    it("exports the seal stanza as OpenBao configuration, without a plugin block by default", () => {
      assert.equal(
        resolved.openbao.sealConfig,
        [
          'seal "gcpckms" {',
          '  project    = "example-homelab"',
          '  region     = "europe-west3"',
          '  key_ring   = "demo-openbao"',
          '  crypto_key = "unseal"',
          "}",
          "",
        ].join("\n"),
      );
    });

    it("adds the KMS plugin block OpenBao 2.7+ needs (gcpckms is no longer built in) when the stack names the plugin", async () => {
      const values: any = clone(withServices());
      const sha256sum = "ab".repeat(32);
      values.openbao = { kmsPlugin: { version: "v0.1.0", sha256sum } };
      const { resolved: r } = await runFoundation(values, { secrets: SECRETS });
      assert.equal(
        r.openbao.sealConfig,
        [
          'plugin "kms" "gcpckms" {',
          '  image     = "ghcr.io/openbao/openbao-plugin-kms-gcp"',
          '  version   = "v0.1.0"',
          `  sha256sum = "${sha256sum}"`,
          "}",
          "",
          'seal "gcpckms" {',
          '  project    = "example-homelab"',
          '  region     = "europe-west3"',
          '  key_ring   = "demo-openbao"',
          '  crypto_key = "unseal"',
          "}",
          "",
        ].join("\n"),
      );
    });

    it("uses an explicit provider for the stack's project and region", () => {
      const provider = recorder.named("demo-gcp");
      assert.deepEqual(provider.inputs, { project: "example-homelab", region: "europe-west3" });
      for (const r of recorder.resources.filter((r) => r.type.startsWith("gcp:"))) {
        assert.ok(
          r.options.provider.startsWith(provider.urn),
          `${r.name} uses ${r.options.provider}`,
        );
      }
    });
  });

  describe("DNS", () => {
    it("points the API endpoint's name at the VIP, with the trailing dot, in the named zone", () => {
      const records = recorder
        .ofType("gcp:dns/recordSet:RecordSet")
        .map((r) => [
          r.inputs.managedZone,
          r.inputs.name,
          r.inputs.type,
          r.inputs.rrdatas,
          r.inputs.ttl,
        ]);
      assert.deepEqual(records.sort(), [
        ["example-net", "*.apps.demo.example.net.", "A", ["192.0.2.60"], 300],
        ["example-net", "api.demo.example.net.", "A", ["192.0.2.10"], 300],
      ]);
      assert.deepEqual(resolved.dnsNames, ["api.demo.example.net.", "*.apps.demo.example.net."]);
    });

    it("points it at the control planes, by family, when there is no VIP", async () => {
      const values: any = clone(withServices());
      delete values.cluster.vip;
      values.nodes[0].network.addresses.push("2001:db8::11/64");
      values.nodes[0].network.gateway6 = "2001:db8::1";
      const { recorder: r } = await runFoundation(values, { secrets: SECRETS });
      const endpoint = r
        .ofType("gcp:dns/recordSet:RecordSet")
        .filter((x) => x.inputs.name === "api.demo.example.net.");
      assert.deepEqual(endpoint.map((x) => [x.inputs.type, x.inputs.rrdatas]).sort(), [
        ["A", ["192.0.2.11", "192.0.2.12", "192.0.2.13"]],
      ]);
    });

    // An OpenStack control plane without a declared address: its Talos address is its port's first
    // fixed IP, known once the port exists; each record type follows that address's family.
    const openstackEndpoint = async (portIps: string[]) => {
      const values: any = clone(withServices());
      delete values.cluster.vip;
      values.cluster.network.connectivity = "kubespan";
      values.openstack = { networkId: "net-example", flavor: "m1.large" };
      values.nodes[2] = { name: "cp-3", role: "controlplane", platform: "openstack" };
      const recorder = new Recorder();
      recorder.behaviour.recordedState = { "demo-cp-3-port": { allFixedIps: portIps } };
      const { recorder: r } = await runFoundation(values, { secrets: SECRETS, recorder });
      return r
        .ofType("gcp:dns/recordSet:RecordSet")
        .filter((x) => x.inputs.name === "api.demo.example.net.")
        .map((x) => [x.name, x.inputs.type, x.inputs.rrdatas])
        .sort();
    };

    it("gives an undeclared control plane whose first fixed IP is IPv6 an AAAA record, not A", async () => {
      assert.deepEqual(await openstackEndpoint(["2001:db8::21", "192.0.2.99"]), [
        ["demo-dns-endpoint-a", "A", ["192.0.2.11", "192.0.2.12"]],
        ["demo-dns-endpoint-aaaa", "AAAA", ["2001:db8::21"]],
      ]);
    });

    it("adds an undeclared control plane's IPv4 first fixed IP to the A record", async () => {
      assert.deepEqual(await openstackEndpoint(["192.0.2.99", "2001:db8::21"]), [
        ["demo-dns-endpoint-a", "A", ["192.0.2.11", "192.0.2.12", "192.0.2.99"]],
      ]);
    });
  });

  describe("Flux handoff", () => {
    const configFor = (node: string) =>
      recorder
        .invokesOf("talos:machine/getConfiguration:getConfiguration")
        .find((i) =>
          i.inputs.configPatches.some((p: string) => p.includes(`hostname: ${node}\n`)),
        )!;
    const handoff = (node: string) =>
      configFor(node)
        .inputs.configPatches.map((p: string) => parse(p))
        .find((d: any) => d.cluster?.inlineManifests);

    it("takes the deploy key the CLI hands over for the run when the stack holds none", async () => {
      const secrets = { "talos-platform:fluxDeployKey": "FAKE-SECRET-deploy-key-from-bitwarden" };
      await withRunSecrets(secrets, async () => {
        const run = await runFoundation(withServices(), { secrets: {} });
        const invoke = run.recorder
          .invokesOf("talos:machine/getConfiguration:getConfiguration")
          .find((i) => i.inputs.configPatches.some((p: string) => p.includes("inlineManifests")))!;
        assert.ok(
          invoke.inputs.configPatches.some((p: string) =>
            p.includes("FAKE-SECRET-deploy-key-from-bitwarden"),
          ),
        );
      });
    });

    it("has Talos install Flux's release manifests and the sync objects on control planes", () => {
      const patch = handoff("cp-2");
      assert.deepEqual(patch.cluster.extraManifests, [
        "https://github.com/fluxcd/flux2/releases/download/v2.7.3/install.yaml",
      ]);
      const objects = parseAllDocuments(patch.cluster.inlineManifests[0].contents).map((d) =>
        d.toJS(),
      );
      assert.deepEqual(
        objects.map((o) => o.kind),
        ["Namespace", "Secret", "GitRepository", "Kustomization"],
      );
      const [, secret, repo, sync] = objects;
      assert.equal(secret.stringData.identity, SECRETS.fluxDeployKey);
      assert.equal(secret.stringData.known_hosts, GITHUB_KNOWN_HOSTS);
      assert.deepEqual(repo.spec, {
        interval: "1m0s",
        url: "ssh://git@github.com/example/homelab.git",
        ref: { branch: "main" },
        secretRef: { name: "flux-system" },
      });
      assert.deepEqual(sync.spec, {
        interval: "10m0s",
        path: "./clusters/demo",
        prune: true,
        sourceRef: { kind: "GitRepository", name: "flux-system" },
      });
    });

    it("keeps the deploy key out of everything but the (secret) machine configs", () => {
      for (const r of recorder.resources) {
        const text = JSON.stringify(r.inputs);
        if (text.includes("FAKE-SECRET-deploy-key"))
          assert.ok(
            r.secretPaths.includes("machineConfigurationInput"),
            `${r.name} holds the deploy key in the open`,
          );
      }
      assert.ok(!JSON.stringify(resolved.flux).includes(FAKE_SECRET_MARKER));
      assert.deepEqual(resolved.flux, {
        repository: "ssh://git@github.com/example/homelab.git",
        branch: "main",
        path: "clusters/demo",
      });
    });

    it("leaves workers out of it", () => {
      assert.equal(handoff("cp-1") !== undefined, true);
      const values: any = clone(withServices());
      values.nodes.push({
        name: "w-1",
        role: "worker",
        platform: "baremetal",
        site: "proxmox",
        baremetal: { address: "192.0.2.40" },
      });
      return runFoundation(values, { secrets: SECRETS }).then(({ recorder: r }) => {
        const worker = r
          .invokesOf("talos:machine/getConfiguration:getConfiguration")
          .find((i) => i.inputs.machineType === "worker")!;
        assert.equal(
          worker.inputs.configPatches.some((p: string) => p.includes("inlineManifests")),
          false,
        );
      });
    });

    it("emits a handoff patch Talos 1.13 accepts", () => {
      const validate = validTalos113();
      assert.ok(
        validate({ version: "v1alpha1", ...handoff("cp-1") }),
        JSON.stringify(validate.errors),
      );
    });
  });
});

describe("the foundation's independence from the app layer", () => {
  it("registers no provider or resource of the app layer", async () => {
    const { recorder } = await runFoundation(readStackFile("prod"), {
      stack: "prod",
      secrets: STACK_SECRETS,
    });
    const appLayer = recorder.resources.filter((r) =>
      /^(vault|grafana|kubernetes):|^pulumi:providers:(vault|grafana|kubernetes)$/.test(r.type),
    );
    assert.deepEqual(appLayer, []);
    assert.ok(recorder.resources.length > 50);
  });
});
