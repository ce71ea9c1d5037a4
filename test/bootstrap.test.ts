// The bootstrap layer's program (components/bootstrap.ts): the state bucket and the secrets key it
// creates, CI's access to them, and nothing registered when its stack file is invalid.
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { StackConfigError } from "../components/config/problems";
import { readStackFile, resolveAll, ROOT, setupRun, STACK_FIXTURES } from "./harness";
import { Recorder } from "./mocks";

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

  it("keeps its own state local: its project names no backend", () => {
    const project = parse(readFileSync(path.join(ROOT, "bootstrap", "Pulumi.yaml"), "utf8"));
    assert.equal(project.backend, undefined);
    assert.equal(project.name, "talos-platform-bootstrap");
  });

  it("points prod at the bucket and KMS key it creates", () => {
    const prod = parse(readFileSync(path.join(STACK_FIXTURES, "Pulumi.prod.yaml"), "utf8"));
    assert.equal(prod.config["talos-platform:backend"], "gs://example-homelab-pulumi-state");
    assert.equal(
      prod.secretsprovider,
      "gcpkms://projects/example-homelab/locations/europe-west3/keyRings/pulumi/cryptoKeys/state-secrets",
    );
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
