import Ajv2020 from "ajv/dist/2020";
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { RUN_SECRETS_ENV, validateBootstrapConfig } from "../components/config";
import {
  clone,
  GITHUB_KNOWN_HOSTS,
  problemsOf as validationProblems,
  proxmoxCluster,
} from "./fixtures";
import {
  isSecret,
  readStackFile,
  ROOT,
  STACK_FIXTURES,
  runFoundation,
  setupRun,
  resolveAll,
  STACK_SECRETS,
  StackValues,
} from "./harness";
import { FAKE_SECRET_MARKER, Recorder } from "./mocks";

/** The Proxmox cluster with every foundation service switched on. */
function withServices(): StackValues {
  const values: any = proxmoxCluster();
  values.gcp = { project: "example-homelab", region: "europe-west3" };
  values.openbao = {};
  values.dns = {
    zone: "example-net",
    domain: "example.net",
    records: [{ name: "*.apps.demo.example.net", values: ["192.0.2.60"] }],
  };
  values.flux = {
    version: "v2.7.3",
    repository: "ssh://git@github.com/example/homelab.git",
    path: "clusters/demo",
    knownHosts: GITHUB_KNOWN_HOSTS,
  };
  return values;
}

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
      const before = process.env[RUN_SECRETS_ENV];
      process.env[RUN_SECRETS_ENV] = JSON.stringify({
        "talos-platform:fluxDeployKey": "FAKE-SECRET-deploy-key-from-bitwarden",
      });
      try {
        const run = await runFoundation(withServices(), { secrets: {} });
        const invoke = run.recorder
          .invokesOf("talos:machine/getConfiguration:getConfiguration")
          .find((i) => i.inputs.configPatches.some((p: string) => p.includes("inlineManifests")))!;
        assert.ok(
          invoke.inputs.configPatches.some((p: string) =>
            p.includes("FAKE-SECRET-deploy-key-from-bitwarden"),
          ),
        );
      } finally {
        if (before === undefined) delete process.env[RUN_SECRETS_ENV];
        else process.env[RUN_SECRETS_ENV] = before;
      }
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
      const schema = JSON.parse(
        readFileSync(path.join(__dirname, "fixtures", "talos-config-v1.13.9.schema.json"), "utf8"),
      );
      const validate = new Ajv2020({ strict: false, formats: { uri: true } }).compile(schema);
      assert.ok(
        validate({ version: "v1alpha1", ...handoff("cp-1") }),
        JSON.stringify(validate.errors),
      );
    });
  });
});

describe("foundation service validation", () => {
  const problemsOf = (change: (v: any) => void, secretKeys = new Set(["fluxDeployKey"])) =>
    validationProblems(withServices, change, secretKeys);

  const cases: [string, (v: any) => void, string[]][] = [
    [
      "services without a GCP project",
      (v) => delete v.gcp,
      [
        "openbao: needs talos-platform:gcp. Add gcp.project and gcp.region",
        "dns: needs talos-platform:gcp. Add gcp.project and gcp.region",
      ],
    ],
    [
      "an endpoint outside the DNS zone",
      (v) => (v.cluster.endpoint = "api.example.org"),
      [
        'cluster.endpoint: is not in dns.domain example.net., so its record cannot be created there; got "api.example.org". Use a name in the zone, or leave talos-platform:dns out and manage the record elsewhere',
      ],
    ],
    [
      "a record outside the DNS zone",
      (v) => (v.dns.records[0].name = "www.example.org"),
      ['dns.records[0].name: is not in dns.domain example.net.; got "www.example.org"'],
    ],
    [
      "an A record with an IPv6 value",
      (v) => (v.dns.records[0].values = ["2001:db8::60"]),
      ['dns.records[0].values[0]: is not an IPv4 address; got "2001:db8::60"'],
    ],
    [
      "an ssh repository without known hosts",
      (v) => delete v.flux.knownHosts,
      [
        "flux.knownHosts: required for an ssh:// repository. Give the Git server's known_hosts line, e.g. from `ssh-keyscan github.com`",
      ],
    ],
    [
      "a Flux version that is not a release",
      (v) => (v.flux.version = "latest"),
      ['flux.version: expected a Flux release such as v2.7.3; got "latest"'],
    ],
  ];
  for (const [label, change, expected] of cases)
    it(`rejects ${label}`, () => assert.deepEqual(problemsOf(change), expected));

  it("rejects an ssh repository without its deploy key secret, naming the key", () => {
    assert.deepEqual(
      problemsOf(() => undefined, new Set()),
      [
        "fluxDeployKey: required for an ssh:// repository, as a secret. Run `pulumi config set --secret fluxDeployKey < deploy_key` (the key file on standard input, not on the command line), or let the CLI resolve it (docs/credentials.md)",
      ],
    );
  });

  it("needs no deploy key for a public https repository", () => {
    assert.deepEqual(
      problemsOf((v) => {
        v.flux.repository = "https://github.com/example/homelab.git";
        delete v.flux.knownHosts;
      }, new Set()),
      [],
    );
  });
});

describe("bootstrap layer", () => {
  const values = () => readStackFile("shared", "bootstrap", "talos-platform-bootstrap");

  it("creates a versioned, uniform-access, non-public, protected state bucket and a protected secrets key", async () => {
    const recorder = await setupRun(values(), {
      project: "talos-platform-bootstrap",
      stack: "shared",
    });
    const { bootstrapLayer } = await import("../components/bootstrap");
    const outputs = await resolveAll(bootstrapLayer());
    await recorder.settled();
    const [bucket] = recorder.ofType("gcp:storage/bucket:Bucket");
    assert.equal(bucket.inputs.name, "example-homelab-pulumi-state");
    assert.deepEqual(bucket.inputs.versioning, { enabled: true });
    assert.equal(bucket.inputs.uniformBucketLevelAccess, true);
    assert.equal(bucket.inputs.publicAccessPrevention, "enforced");
    assert.equal(bucket.inputs.forceDestroy, false);
    assert.equal(bucket.options.protect, true);
    const key = recorder.ofType("gcp:kms/cryptoKey:CryptoKey")[0];
    assert.equal(key.options.protect, true);
    assert.equal(recorder.ofType("gcp:kms/keyRing:KeyRing")[0].options.protect, true);
    assert.deepEqual(outputs, {
      backendUrl: "gs://example-homelab-pulumi-state",
      secretsProvider:
        "gcpkms://projects/example-homelab/locations/europe-west3/keyRings/pulumi/cryptoKeys/state-secrets",
    });
  });

  it("grants CI's principals object admin on the bucket and encrypter/decrypter on the secrets key", async () => {
    const recorder = await setupRun(values(), {
      project: "talos-platform-bootstrap",
      stack: "shared",
    });
    const { bootstrapLayer } = await import("../components/bootstrap");
    await resolveAll(bootstrapLayer());
    await recorder.settled();
    const ci = "serviceAccount:platform-ci@example-homelab.iam.gserviceaccount.com";
    const [objects] = recorder.ofType("gcp:storage/bucketIAMMember:BucketIAMMember");
    assert.deepEqual(
      [objects.inputs.bucket, objects.inputs.role, objects.inputs.member],
      ["example-homelab-pulumi-state", "roles/storage.objectAdmin", ci],
    );
    const [secrets] = recorder.ofType("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember");
    assert.deepEqual(
      [secrets.inputs.role, secrets.inputs.member],
      ["roles/cloudkms.cryptoKeyEncrypterDecrypter", ci],
    );
    assert.equal(
      secrets.inputs.cryptoKeyId,
      "projects/example-homelab/locations/europe-west3/keyRings/pulumi/cryptoKeys/state-secrets",
    );
  });

  it("rejects a CI member that is not an IAM principal", () => {
    assert.throws(
      () =>
        validateBootstrapConfig(
          {
            gcp: { project: "example-homelab", region: "x" },
            stateBucket: { name: "example-state" },
            ciMembers: ["platform-ci@example-homelab.iam.gserviceaccount.com"],
          },
          "bootstrap/Pulumi.shared.yaml",
        ),
      (e: Error) =>
        e.message ===
        'bootstrap/Pulumi.shared.yaml has 1 problem; nothing was created:\n  - ciMembers[0]: expected an IAM principal, e.g. serviceAccount:ci@<project>.iam.gserviceaccount.com; got "platform-ci@example-homelab.iam.gserviceaccount.com"',
    );
  });

  it("keeps its own state local: its project names no backend", () => {
    const project = parse(readFileSync(path.join(ROOT, "bootstrap", "Pulumi.yaml"), "utf8"));
    assert.equal(project.backend, undefined);
    assert.equal(project.name, "talos-platform-bootstrap");
  });

  it("rejects a bad bucket name naming the bootstrap stack file", () => {
    assert.throws(
      () =>
        validateBootstrapConfig(
          { gcp: { project: "example-homelab", region: "x" }, stateBucket: { name: "Bad_Name" } },
          "bootstrap/Pulumi.shared.yaml",
        ),
      (e: Error) =>
        e.message ===
        'bootstrap/Pulumi.shared.yaml has 1 problem; nothing was created:\n  - stateBucket.name: expected a bucket name (3-63 lowercase letters, digits and dashes); got "Bad_Name"',
    );
  });

  it("points prod at the bucket and KMS key it creates", () => {
    const prod = parse(readFileSync(path.join(STACK_FIXTURES, "Pulumi.prod.yaml"), "utf8"));
    assert.equal(prod.config["talos-platform:backend"], "gs://example-homelab-pulumi-state");
    assert.equal(
      prod.secretsprovider,
      "gcpkms://projects/example-homelab/locations/europe-west3/keyRings/pulumi/cryptoKeys/state-secrets",
    );
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

  it("imports nothing of the app layer, OpenBao or Kubernetes", () => {
    const seen = new Set<string>();
    const forbidden: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      for (const [, spec] of text.matchAll(/from "([^"]+)"/g)) {
        if (
          /^(@pulumi\/(vault|kubernetes)|@pulumiverse\/grafana)/.test(spec) ||
          /(^|\/)app(\/|$)/.test(spec)
        )
          forbidden.push(`${path.relative(ROOT, file)} imports ${spec}`);
        if (spec.startsWith(".")) {
          const target = path.resolve(path.dirname(file), spec);
          for (const candidate of [`${target}.ts`, path.join(target, "index.ts")]) {
            try {
              readFileSync(candidate);
              visit(candidate);
              break;
            } catch {
              // not this form
            }
          }
        }
      }
    };
    visit(path.join(ROOT, "index.ts"));
    assert.ok(seen.size > 20, `followed ${seen.size} modules`);
    assert.deepEqual(forbidden, []);
  });
});
