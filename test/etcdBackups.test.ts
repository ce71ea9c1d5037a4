// Off-site etcd backups as the program registers them: the Talos API access patch on control planes,
// the writer's service account with its grant limited to the prefix, its HMAC key kept secret, and
// talos-backup's CronJob with its Secret as an inline manifest. What a stack file may ask:
// the settings cases at the end.
import { strict as assert } from "node:assert";
import { parse, parseAllDocuments } from "yaml";
import {
  clone,
  problemsOf,
  TEST_AGE_RECIPIENT,
  validTalos113,
  warningsOf,
  withEtcdBackups,
} from "./fixtures";
import { runFoundation, STACK_SECRETS } from "./harness";
import { FAKE_SECRET_MARKER, Recorder } from "./mocks";
import { schedulePeriodMs } from "../components/config/etcdBackups";

const SECRETS = { fluxDeployKey: STACK_SECRETS.fluxDeployKey };
const HMAC_SECRET = `${FAKE_SECRET_MARKER}-hmac-secret`;

describe("off-site etcd backups", () => {
  let recorder: Recorder;
  let resolved: any;
  before(
    async () =>
      ({ recorder, resolved } = await runFoundation(withEtcdBackups(), { secrets: SECRETS })),
  );

  const patchesOf = (r: Recorder, role: string) =>
    r
      .invokesOf("talos:machine/getConfiguration:getConfiguration")
      .filter((i) => i.inputs.machineType === role)
      .map((i) => (i.inputs.configPatches as string[]).map((p) => parse(p)));
  const backupManifest = (patches: any[]) =>
    patches
      .flatMap((p) => p?.cluster?.inlineManifests ?? [])
      .find((m: any) => m.name === "talos-platform-etcd-backups");

  it("allows Talos API access with os:etcd:backup from one namespace on every control plane, workers untouched", () => {
    const cps = patchesOf(recorder, "controlplane");
    assert.ok(cps.length >= 1);
    for (const patches of cps) {
      const access = patches.find((p) => p?.machine?.features?.kubernetesTalosAPIAccess);
      assert.deepEqual(access.machine.features.kubernetesTalosAPIAccess, {
        enabled: true,
        allowedRoles: ["os:etcd:backup"],
        allowedKubernetesNamespaces: ["talos-backup"],
      });
      const validate = validTalos113();
      assert.ok(validate({ version: "v1alpha1", ...access }), JSON.stringify(validate.errors));
    }
    for (const patches of patchesOf(recorder, "worker"))
      assert.equal(JSON.stringify(patches).includes("kubernetesTalosAPIAccess"), false);
  });

  it("lets a service account of its own only create objects under gs://<state bucket>/etcd/<cluster>/", () => {
    const account = recorder
      .ofType("gcp:serviceaccount/account:Account")
      .find((a) => String(a.inputs.accountId).includes("etcd-backup"))!;
    assert.equal(account.inputs.accountId, "demo-etcd-backup");
    const grants = recorder.ofType("gcp:storage/bucketIAMMember:BucketIAMMember");
    assert.equal(grants.length, 1);
    const [grant] = grants;
    assert.deepEqual(
      [grant.inputs.bucket, grant.inputs.role, grant.inputs.member],
      [
        "demo-state",
        "roles/storage.objectCreator",
        "serviceAccount:demo-etcd-backup@example-homelab.iam.gserviceaccount.com",
      ],
    );
    assert.equal(
      grant.inputs.condition.expression,
      'resource.name.startsWith("projects/_/buckets/demo-state/objects/etcd/demo/")',
    );
    assert.ok(grant.inputs.condition.title);
    // Nothing broader: no project-level or bucket-wide binding.
    assert.equal(
      recorder.resources.some(
        (r) => r.type.startsWith("gcp:projects/") || r.type.includes("IAMBinding"),
      ),
      false,
    );
    const key = recorder.ofType("gcp:storage/hmacKey:HmacKey")[0];
    assert.equal(
      key.inputs.serviceAccountEmail,
      "demo-etcd-backup@example-homelab.iam.gserviceaccount.com",
    );
    assert.ok(key.options.additionalSecretOutputs?.includes("secret"));
  });

  it("delivers talos-backup's CronJob, its talos.dev ServiceAccount and the HMAC key's Secret on control planes", () => {
    const manifest = backupManifest(patchesOf(recorder, "controlplane")[0]);
    const objects = parseAllDocuments(manifest.contents).map((d) => d.toJS());
    assert.deepEqual(
      objects.map(
        (o) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`,
      ),
      [
        "v1 Namespace /talos-backup",
        "talos.dev/v1alpha1 ServiceAccount talos-backup/talos-backup",
        "v1 Secret talos-backup/talos-backup-s3",
        "batch/v1 CronJob talos-backup/talos-backup",
      ],
    );
    const [, sa, secret, cron] = objects;
    assert.deepEqual(sa.spec, { roles: ["os:etcd:backup"] });
    assert.deepEqual(secret.stringData, {
      AWS_ACCESS_KEY_ID: "GOOG1E" + "A".repeat(55),
      AWS_SECRET_ACCESS_KEY: HMAC_SECRET,
    });
    assert.equal(cron.spec.schedule, "0 */6 * * *");
    assert.equal(cron.spec.timeZone, "Etc/UTC");
    assert.equal(cron.spec.concurrencyPolicy, "Forbid");
    const pod = cron.spec.jobTemplate.spec.template.spec;
    const [container] = pod.containers;
    assert.equal(container.image, "ghcr.io/siderolabs/talos-backup:v0.1.0-beta.3");
    const env = Object.fromEntries(
      container.env.map((e: any) => [
        e.name,
        e.value ?? `secret:${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`,
      ]),
    );
    assert.deepEqual(env, {
      AWS_ACCESS_KEY_ID: "secret:talos-backup-s3/AWS_ACCESS_KEY_ID",
      AWS_SECRET_ACCESS_KEY: "secret:talos-backup-s3/AWS_SECRET_ACCESS_KEY",
      AWS_REGION: "auto",
      CUSTOM_S3_ENDPOINT: "https://storage.googleapis.com",
      BUCKET: "demo-state",
      S3_PREFIX: "etcd/demo",
      CLUSTER_NAME: "demo",
      AGE_X25519_PUBLIC_KEY: TEST_AGE_RECIPIENT,
      AWS_REQUEST_CHECKSUM_CALCULATION: "when_required",
      AWS_RESPONSE_CHECKSUM_VALIDATION: "when_required",
    });
    // The talosconfig Talos writes for the ServiceAccount is mounted where talos-backup reads it.
    assert.deepEqual(
      container.volumeMounts.find((m: any) => m.name === "talos-secrets"),
      { name: "talos-secrets", mountPath: "/var/run/secrets/talos.dev" },
    );
    assert.deepEqual(pod.volumes.find((v: any) => v.name === "talos-secrets").secret, {
      secretName: "talos-backup",
    });
    assert.equal(backupManifest(patchesOf(recorder, "worker")[0] ?? []), undefined);
  });

  it("keeps the HMAC secret out of everything but the (secret) machine configs", () => {
    for (const r of recorder.resources) {
      if (JSON.stringify(r.inputs).includes(HMAC_SECRET))
        assert.ok(
          r.secretPaths.includes("machineConfigurationInput"),
          `${r.type} ${r.name} holds the HMAC secret in the open`,
        );
    }
    // (The config invoke gets it too, as the Flux deploy key: invokes are not kept in the state.)
    const { machineConfigurations, ...rest } = resolved;
    void machineConfigurations;
    assert.equal(JSON.stringify(rest).includes(HMAC_SECRET), false);
  });

  it("with a file:// stand-in, allows the Talos API access but creates no GCP identity and no job", async () => {
    const values: any = clone(withEtcdBackups());
    values.etcdBackups.destination = "file:///srv/etcd-backups";
    const run = await runFoundation(values, { secrets: SECRETS });
    assert.equal(run.recorder.ofType("gcp:storage/hmacKey:HmacKey").length, 0);
    assert.equal(run.recorder.ofType("gcp:storage/bucketIAMMember:BucketIAMMember").length, 0);
    const cp = patchesOf(run.recorder, "controlplane")[0];
    assert.ok(cp.some((p) => p?.machine?.features?.kubernetesTalosAPIAccess));
    assert.equal(backupManifest(cp), undefined);
  });

  describe("settings", () => {
    const refuse = (change: (v: any) => void) =>
      problemsOf(withEtcdBackups, change, new Set(["fluxDeployKey"]));

    it("takes a valid stack with defaults", () =>
      assert.deepEqual(
        refuse(() => {}),
        [],
      ));

    it("names the key of a schedule that is not five-field cron", () => {
      const problems = refuse((v) => (v.etcdBackups.schedule = "every 6 hours"));
      assert.equal(problems.length, 1);
      assert.match(
        problems[0],
        /^etcdBackups\.schedule: has 3 fields; a CronJob schedule has five/,
      );
      assert.match(
        refuse((v) => (v.etcdBackups.schedule = "0 25 * * *"))[0],
        /^etcdBackups\.schedule: is not a cron schedule/,
      );
    });

    it("names the key of an age key that is not one", () => {
      const problems = refuse((v) => (v.etcdBackups.encryption.age = "AGE-SECRET-KEY-1XYZ"));
      assert.match(problems[0], /^etcdBackups\.encryption\.age: expected an age X25519 public key/);
    });

    it("refuses a destination it cannot settle, naming etcdBackups.destination", () => {
      assert.match(
        refuse((v) => delete v.backend)[0],
        /^etcdBackups\.destination: required: the state backend is not a gs:\/\/ bucket to default to/,
      );
      assert.match(
        refuse((v) => (v.etcdBackups.destination = "gs://demo-state"))[0],
        /^etcdBackups\.destination: needs a folder in the bucket/,
      );
      assert.match(
        refuse((v) => (v.etcdBackups.destination = "s3://bucket/etcd/"))[0],
        /^etcdBackups\.destination: expected gs:\/\/<bucket>\/<folder>\/ or file:\/\/\/<folder>/,
      );
    });

    it("needs talos-platform:gcp for a bucket, not for a file:// stand-in (which it warns about)", () => {
      const problems = refuse((v) => {
        delete v.gcp;
        delete v.openbao;
        delete v.dns;
      });
      assert.deepEqual(problems, [
        "etcdBackups: needs talos-platform:gcp for gs://demo-state/etcd/demo/. Add gcp.project and gcp.region: the job's service account and its HMAC key are created there",
      ]);
      const warnings = warningsOf(withEtcdBackups, (v) => {
        v.etcdBackups.destination = "file:///srv/etcd-backups";
        delete v.fluxDeployKey;
        v.flux.repository = "https://github.com/example/homelab.git";
      });
      assert.ok(
        warnings.some((w) => w.startsWith("etcdBackups.destination: is a file:// folder")),
        warnings.join("\n"),
      );
    });

    it("works out the schedule's longest gap", () => {
      assert.equal(schedulePeriodMs("0 */6 * * *"), 6 * 3600_000);
      assert.equal(schedulePeriodMs("0 3 * * 1-5"), 3 * 24 * 3600_000);
      assert.equal(schedulePeriodMs("30 2 * * *"), 24 * 3600_000);
    });
  });
});
