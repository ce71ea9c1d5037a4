import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";

/** Inputs of a {@link StateBucket}. */
export interface StateBucketArgs {
  readonly project: string;
  /** Globally unique bucket name. */
  readonly bucketName: string;
  /** Bucket location, e.g. EU or europe-west3. */
  readonly location: string;
  /** Keep this many older versions of each state file. @default 20 */
  readonly keepVersions?: number;
  /** A KMS key for the `gcpkms://` secrets provider of the other layers' stacks. */
  readonly secretsKey?: {
    readonly keyRing: string;
    readonly cryptoKey: string;
    readonly location: string;
  };
  /**
   * IAM principals of CI (`serviceAccount:ci@<project>.iam.gserviceaccount.com`): object admin on the
   * bucket (state, and the lock objects even a preview writes) and encrypter/decrypter on the key.
   */
  readonly ciMembers?: readonly string[];
  readonly provider: gcp.Provider;
}

/** The roles CI needs to run the app layer against this bucket and key. */
const CI_BUCKET_ROLE = "roles/storage.objectAdmin";
const CI_KEY_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter";

/** A resource-name-safe form of an IAM principal. */
function memberSlug(member: string): string {
  return member
    .replace(/^[a-zA-Z]+:/, "")
    .replace(/@.*$/, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-");
}

/**
 * The bucket every other layer keeps its Pulumi state in: versioned (a bad write can be rolled back),
 * uniform bucket-level access, public access prevented, protected. Optionally the KMS key their
 * secrets are encrypted with, protected too.
 */
export class StateBucket extends pulumi.ComponentResource {
  /** `gs://<bucket>`: the backend URL of the foundation and app layers. */
  public readonly backendUrl: pulumi.Output<string>;
  /** `gcpkms://projects/…/cryptoKeys/…`, when a secrets key was asked for. */
  public readonly secretsProvider?: pulumi.Output<string>;

  constructor(name: string, args: StateBucketArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:gcp:StateBucket", name, {}, opts);
    const resourceOpts = { parent: this, provider: args.provider };
    const bucket = new gcp.storage.Bucket(
      `${name}-bucket`,
      {
        name: args.bucketName,
        project: args.project,
        location: args.location,
        versioning: { enabled: true },
        uniformBucketLevelAccess: true,
        publicAccessPrevention: "enforced",
        forceDestroy: false,
        lifecycleRules: [
          {
            action: { type: "Delete" },
            condition: { numNewerVersions: args.keepVersions ?? 20, withState: "ARCHIVED" },
          },
        ],
        labels: { purpose: "pulumi-state" },
      },
      { ...resourceOpts, protect: true },
    );
    this.backendUrl = pulumi.interpolate`gs://${bucket.name}`;
    for (const member of args.ciMembers ?? []) {
      new gcp.storage.BucketIAMMember(
        `${name}-ci-${memberSlug(member)}-objects`,
        { bucket: bucket.name, role: CI_BUCKET_ROLE, member },
        resourceOpts,
      );
    }

    if (args.secretsKey) {
      const { keyRing, cryptoKey, location } = args.secretsKey;
      const ring = new gcp.kms.KeyRing(
        `${name}-secrets-key-ring`,
        { name: keyRing, location, project: args.project },
        { ...resourceOpts, protect: true },
      );
      const key = new gcp.kms.CryptoKey(
        `${name}-secrets-key`,
        {
          name: cryptoKey,
          keyRing: ring.id,
          purpose: "ENCRYPT_DECRYPT",
          labels: { purpose: "pulumi-secrets" },
        },
        { ...resourceOpts, protect: true },
      );
      // key.id is projects/P/locations/L/keyRings/R/cryptoKeys/K, the form gcpkms:// takes.
      this.secretsProvider = pulumi.interpolate`gcpkms://${key.id}`;
      for (const member of args.ciMembers ?? []) {
        new gcp.kms.CryptoKeyIAMMember(
          `${name}-ci-${memberSlug(member)}-secrets`,
          { cryptoKeyId: key.id, role: CI_KEY_ROLE, member },
          resourceOpts,
        );
      }
    }
    this.registerOutputs({ backendUrl: this.backendUrl, secretsProvider: this.secretsProvider });
  }
}
