// The bootstrap layer's program (components/bootstrap.ts): the state bucket and the secrets key it
// creates, CI's identities and their grants, and nothing registered when its stack file is invalid.
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { StackConfigError } from "../components/config/problems";
import { readStackFile, resolveAll, ROOT, setupRun, STACK_FIXTURES } from "./harness";
import { Recorder } from "./mocks";

describe("bootstrap layer", () => {
  const values = () => readStackFile("shared", "bootstrap", "talos-platform-bootstrap");

  const run = async (change: (v: any) => void = () => undefined) => {
    const config: any = structuredClone(values());
    change(config);
    const recorder = await setupRun(config, {
      project: "talos-platform-bootstrap",
      stack: "shared",
    });
    const { bootstrapLayer } = await import("../components/bootstrap");
    const outputs = await resolveAll(bootstrapLayer());
    await recorder.settled();
    return { recorder, outputs };
  };
  const KEY_RING = "projects/example-homelab/locations/europe-west3/keyRings/pulumi";
  const BUCKET = "projects/_/buckets/example-homelab-pulumi-state/objects/";
  const POOL =
    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools";
  const principal = (pool: string, env: string) =>
    `${POOL}/${pool}/subject/repo:example/homelab:environment:${env}`;

  it("creates a versioned, uniform-access, non-public, protected state bucket and a protected key per layer and environment", async () => {
    const { recorder, outputs } = await run();
    const [bucket] = recorder.ofType("gcp:storage/bucket:Bucket");
    assert.equal(bucket.inputs.name, "example-homelab-pulumi-state");
    assert.deepEqual(bucket.inputs.versioning, { enabled: true });
    assert.equal(bucket.inputs.uniformBucketLevelAccess, true);
    assert.equal(bucket.inputs.publicAccessPrevention, "enforced");
    assert.equal(bucket.inputs.forceDestroy, false);
    assert.equal(bucket.options.protect, true);
    const keys = recorder.ofType("gcp:kms/cryptoKey:CryptoKey");
    assert.deepEqual(
      keys.map((k) => k.inputs.name),
      ["foundation-staging", "foundation-prod", "app-staging", "app-prod"],
    );
    for (const key of keys) assert.equal(key.options.protect, true, key.name);
    const rings = recorder.ofType("gcp:kms/keyRing:KeyRing");
    assert.equal(rings.length, 1);
    assert.equal(rings[0].options.protect, true);
    assert.deepEqual(outputs, {
      backendUrl: "gs://example-homelab-pulumi-state",
      secretsProviders: {
        foundation: {
          staging: `gcpkms://${KEY_RING}/cryptoKeys/foundation-staging`,
          prod: `gcpkms://${KEY_RING}/cryptoKeys/foundation-prod`,
        },
        app: {
          staging: `gcpkms://${KEY_RING}/cryptoKeys/app-staging`,
          prod: `gcpkms://${KEY_RING}/cryptoKeys/app-prod`,
        },
      },
      ciWorkloadIdentityProviders: {
        preview:
          "projects/123456789012/locations/global/workloadIdentityPools/github-preview/providers/github",
        apply:
          "projects/123456789012/locations/global/workloadIdentityPools/github-apply/providers/github",
      },
    });
  });

  it("keeps the legacy shared key (no CI grant on it) in the same key ring", async () => {
    const { recorder, outputs } = await run((v) => {
      v.secretsKey = { keyRing: "pulumi", cryptoKey: "state-secrets" };
    });
    assert.equal(recorder.ofType("gcp:kms/keyRing:KeyRing").length, 1);
    assert.equal(outputs.secretsProvider, `gcpkms://${KEY_RING}/cryptoKeys/state-secrets`);
    for (const grant of recorder.ofType("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")) {
      assert.doesNotMatch(grant.inputs.cryptoKeyId, /state-secrets/);
    }
  });

  it("federates GitHub's OIDC tokens of this repository id only, one pool per kind of run, bound to main's workflow for apply", async () => {
    const { recorder } = await run();
    const pools = recorder.ofType("gcp:iam/workloadIdentityPool:WorkloadIdentityPool");
    assert.deepEqual(
      pools.map((p) => p.inputs.workloadIdentityPoolId),
      ["github-preview", "github-apply"],
      "no drift pool unless ci.drift",
    );
    const providers = recorder.ofType(
      "gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider",
    );
    const byPool = Object.fromEntries(providers.map((p) => [p.inputs.workloadIdentityPoolId, p]));
    for (const provider of providers) {
      assert.deepEqual(provider.inputs.oidc, {
        issuerUri: "https://token.actions.githubusercontent.com",
      });
      assert.equal(provider.inputs.attributeMapping["google.subject"], "assertion.sub");
    }
    assert.equal(
      byPool["github-apply"].inputs.attributeCondition,
      'assertion.repository_id == "123456789" && assertion.repository_owner_id == "987654321" && ' +
        'assertion.ref == "refs/heads/main" && ' +
        'assertion.job_workflow_ref == "example/homelab/.github/workflows/main.yml@refs/heads/main"',
    );
    assert.equal(
      byPool["github-preview"].inputs.attributeCondition,
      'assertion.repository_id == "123456789" && assertion.repository_owner_id == "987654321" && ' +
        'assertion.event_name == "pull_request" && ' +
        'assertion.job_workflow_ref.startsWith("example/homelab/.github/workflows/pull-request.yml@")',
    );
    assert.equal(recorder.ofType("gcp:serviceaccount/key:Key").length, 0, "no key files");
  });

  it("lets previews only read, apply write only its own app stack, and never hands a foundation key to either", async () => {
    const { recorder } = await run();
    const bucketGrants = recorder.ofType("gcp:storage/bucketIAMMember:BucketIAMMember");
    const keyGrants = recorder.ofType("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember");
    const grantsOf = (member: string) => ({
      bucket: bucketGrants
        .filter((g) => g.inputs.member === member)
        .map((g) => [g.inputs.role, g.inputs.condition?.expression]),
      keys: keyGrants
        .filter((g) => g.inputs.member === member)
        .map((g) => [g.inputs.role, g.inputs.cryptoKeyId]),
    });
    for (const env of ["staging", "prod"]) {
      assert.deepEqual(grantsOf(principal("github-preview", `preview-${env}`)), {
        // A preview writes nothing (its lease stays in the checkout): read access only.
        bucket: [["roles/storage.objectViewer", undefined]],
        keys: [["roles/cloudkms.cryptoKeyDecrypter", `${KEY_RING}/cryptoKeys/app-${env}`]],
      });
      assert.deepEqual(grantsOf(principal("github-apply", env)), {
        bucket: [
          ["roles/storage.objectViewer", undefined],
          [
            "roles/storage.objectUser",
            [
              `.pulumi/stacks/talos-platform-app/${env}.json`,
              `.pulumi/history/talos-platform-app/${env}/`,
              `.pulumi/backups/talos-platform-app/${env}/`,
              `.pulumi/locks/organization/talos-platform-app/${env}/`,
              `.platform-locks/talos-platform-app/${env}.lock`,
            ]
              .map((prefix) => `resource.name.startsWith("${BUCKET}${prefix}")`)
              .join(" || "),
          ],
        ],
        keys: [["roles/cloudkms.cryptoKeyEncrypterDecrypter", `${KEY_RING}/cryptoKeys/app-${env}`]],
      });
    }
    assert.equal(bucketGrants.length, 6, "nothing else on the bucket");
    assert.equal(keyGrants.length, 4);
    for (const grant of keyGrants) assert.doesNotMatch(grant.inputs.cryptoKeyId, /foundation-/);
    for (const grant of bucketGrants) {
      assert.notEqual(grant.inputs.role, "roles/storage.objectAdmin");
      assert.doesNotMatch(grant.inputs.condition?.expression ?? "", /talos-platform\//);
    }
  });

  it("gives the opt-in drift identity, bound to drift.yml on main, its foundation key and foundation lease only", async () => {
    const { recorder } = await run((v) => {
      v.ci.drift = true;
    });
    const [provider] = recorder
      .ofType("gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider")
      .filter((p) => p.inputs.workloadIdentityPoolId === "github-drift");
    assert.match(
      provider.inputs.attributeCondition,
      /assertion\.job_workflow_ref == "example\/homelab\/\.github\/workflows\/drift\.yml@refs\/heads\/main"$/,
    );
    const member = principal("github-drift", "drift-prod");
    assert.deepEqual(
      recorder
        .ofType("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
        .filter((g) => g.inputs.member === member)
        .map((g) => [g.inputs.role, g.inputs.cryptoKeyId]),
      [["roles/cloudkms.cryptoKeyDecrypter", `${KEY_RING}/cryptoKeys/foundation-prod`]],
    );
    assert.deepEqual(
      recorder
        .ofType("gcp:storage/bucketIAMMember:BucketIAMMember")
        .filter((g) => g.inputs.member === member && g.inputs.condition)
        .map((g) => g.inputs.condition.expression),
      [`resource.name.startsWith("${BUCKET}.platform-locks/talos-platform/prod.lock")`],
    );
  });

  it("refuses the old ciMembers, naming the key and what replaces it, and registers nothing", async () => {
    const recorder = new Recorder();
    await setupRun(
      {
        ...values(),
        ciMembers: ["serviceAccount:platform-ci@example-homelab.iam.gserviceaccount.com"],
      },
      { recorder, project: "talos-platform-bootstrap", stack: "shared" },
    );
    const { bootstrapLayer } = await import("../components/bootstrap");
    assert.throws(
      () => bootstrapLayer(),
      (e: Error) =>
        e instanceof StackConfigError &&
        /ciMembers: refused: it gave CI object admin on the whole state bucket/.test(e.message) &&
        /talos-platform-bootstrap:secretsKeys/.test(e.message) &&
        /talos-platform-bootstrap:ci /.test(e.message),
    );
    await recorder.settled();
    assert.equal(recorder.resources.length, 0);
  });

  it("keeps its own state local: its project names no backend", () => {
    const project = parse(readFileSync(path.join(ROOT, "bootstrap", "Pulumi.yaml"), "utf8"));
    assert.equal(project.backend, undefined);
    assert.equal(project.name, "talos-platform-bootstrap");
  });

  it("points prod at the bucket and prod foundation's own KMS key", () => {
    const prod = parse(readFileSync(path.join(STACK_FIXTURES, "Pulumi.prod.yaml"), "utf8"));
    assert.equal(prod.config["talos-platform:backend"], "gs://example-homelab-pulumi-state");
    assert.equal(prod.secretsprovider, `gcpkms://${KEY_RING}/cryptoKeys/foundation-prod`);
  });

  it("registers nothing when the bootstrap stack file is invalid", async () => {
    const recorder = new Recorder();
    await setupRun(
      { ...values(), gcpCredentials: "{}" },
      { recorder, project: "talos-platform-bootstrap", stack: "shared" },
    );
    const { bootstrapLayer } = await import("../components/bootstrap");
    assert.throws(() => bootstrapLayer(), StackConfigError);
    await recorder.settled();
    assert.equal(recorder.resources.length, 0);
  });
});
