// The identity the in-cluster backup job writes with: a service account of its own, allowed on the
// state bucket only to create objects under the backups' prefix, and an HMAC key for it (talos-backup
// speaks S3 only; Cloud Storage's XML API takes HMAC keys). roles/storage.objectCreator holds
// storage.objects.create and the multipart-upload permissions, not get, list or delete; Cloud Storage
// needs storage.objects.delete to replace an existing object, so the job can neither read, remove nor
// overwrite a backup. The grant carries an IAM condition on the object's name
// (`resource.name.startsWith("projects/_/buckets/<bucket>/objects/<prefix>")`, the form of Cloud
// Storage's resource names in IAM conditions), so no other prefix of the bucket is writable.
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { BackupDestination, GcpSpec } from "../spec/types";
import type { WriterKey } from "../etcdBackups/manifests";

/** What the job may do in the bucket. */
export const BACKUP_WRITER_ROLE = "roles/storage.objectCreator";

/** Inputs of an {@link EtcdBackupWriter}. */
export interface EtcdBackupWriterArgs {
  readonly gcp: GcpSpec;
  readonly clusterName: string;
  readonly destination: Extract<BackupDestination, { kind: "gs" }>;
  readonly provider: gcp.Provider;
}

/** The IAM condition limiting a grant on `bucket` to objects under `prefix`. */
export function prefixCondition(bucket: string, prefix: string): string {
  return `resource.name.startsWith(${JSON.stringify(`projects/_/buckets/${bucket}/objects/${prefix}`)})`;
}

/** A service-account ID (6-30 characters: a letter, then lowercase letters, digits, hyphens). */
function accountId(clusterName: string): string {
  const id = `${clusterName}-etcd-backup`.slice(0, 30).replace(/-+$/, "");
  return id.length >= 6 ? id : `${id}-bkp`;
}

/** The backup job's service account, its prefix-limited grant on the bucket and its HMAC key. */
export class EtcdBackupWriter extends pulumi.ComponentResource {
  /** The account's email. */
  readonly email: pulumi.Output<string>;
  /** The HMAC key (its secret half a Pulumi secret). */
  readonly key: pulumi.Output<WriterKey>;

  constructor(name: string, args: EtcdBackupWriterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("talos-platform:gcp:EtcdBackupWriter", name, {}, opts);
    const options = { parent: this, provider: args.provider };
    const { bucket, prefix } = args.destination;
    const account = new gcp.serviceaccount.Account(
      `${name}-account`,
      {
        project: args.gcp.project,
        accountId: accountId(args.clusterName),
        displayName: `etcd backups of ${args.clusterName} (talos-backup)`,
      },
      options,
    );
    this.email = account.email;
    const member = pulumi.interpolate`serviceAccount:${account.email}`;
    const grant = new gcp.storage.BucketIAMMember(
      `${name}-writer`,
      {
        bucket,
        role: BACKUP_WRITER_ROLE,
        member,
        condition: {
          title: `etcd backups of ${args.clusterName}`.slice(0, 100),
          description: `create objects under gs://${bucket}/${prefix} only`,
          expression: prefixCondition(bucket, prefix),
        },
      },
      options,
    );
    const key = new gcp.storage.HmacKey(
      `${name}-hmac`,
      { project: args.gcp.project, serviceAccountEmail: account.email },
      { ...options, additionalSecretOutputs: ["secret"], dependsOn: [grant] },
    );
    this.key = pulumi.secret(
      pulumi
        .all([key.accessId, key.secret])
        .apply(([accessId, secret]): WriterKey => ({ accessId, secret })),
    );
    this.registerOutputs({ email: this.email });
  }
}
