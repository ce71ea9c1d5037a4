// Off-site etcd backups in the cluster: the control-plane patch allowing Talos API access with the
// os:etcd:backup role from one namespace (machine.features.kubernetesTalosAPIAccess, Talos 1.13's
// schema), and siderolabs/talos-backup as a CronJob there, handed to Talos as an inline manifest the
// way the Flux handoff is. talos-backup (v0.1.0-beta.3, cmd/talos-backup and pkg/config) reads its
// settings from the environment: BUCKET, S3_PREFIX, CLUSTER_NAME, CUSTOM_S3_ENDPOINT, AWS_REGION,
// AGE_X25519_PUBLIC_KEY, the AWS SDK's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; it names each
// object `<S3_PREFIX>/<cluster>-<RFC 3339 time>.snap.age`. It speaks S3 only, so Cloud Storage is
// reached through its S3-compatible XML API with an HMAC key (components/gcp/etcdBackupWriter.ts).
// Pure.
import { stringify } from "yaml";
import type { ConfigDocument } from "../talos/patches";
import type { EtcdBackupsSpec } from "../spec/types";

/** The Talos API role the job is given: etcd snapshots, nothing else. */
export const ETCD_BACKUP_ROLE = "os:etcd:backup";
/** Name of the CronJob, its talos.dev ServiceAccount and Secrets. */
export const BACKUP_JOB = "talos-backup";
/** The Secret Talos writes the job's talosconfig into (named after the talos.dev ServiceAccount). */
const TALOS_SECRET = BACKUP_JOB;
/** The Secret holding the HMAC key the job writes to the bucket with. */
export const BACKUP_CREDENTIALS_SECRET = "talos-backup-s3";
/** Cloud Storage's S3-compatible XML API endpoint. */
export const GCS_XML_ENDPOINT = "https://storage.googleapis.com";
/** The inline manifest's name. */
export const BACKUP_MANIFEST = "talos-platform-etcd-backups";

/** The control-plane patch letting pods in the backup namespace ask Talos for etcd snapshots. */
export function talosApiAccessPatch(settings: EtcdBackupsSpec): ConfigDocument {
  return {
    machine: {
      features: {
        kubernetesTalosAPIAccess: {
          enabled: true,
          allowedRoles: [ETCD_BACKUP_ROLE],
          allowedKubernetesNamespaces: [settings.namespace],
        },
      },
    },
  };
}

/** The HMAC key the job authenticates to the XML API with (the secret half is a secret). */
export interface WriterKey {
  readonly accessId: string;
  readonly secret: string;
}

/** The Kubernetes objects of the backup job (the destination must be a bucket). */
export function backupManifests(
  settings: EtcdBackupsSpec,
  clusterName: string,
  key: WriterKey,
): Record<string, unknown>[] {
  const { destination } = settings;
  if (destination.kind !== "gs")
    throw new Error("the in-cluster job writes to a gs:// bucket only");
  const namespace = settings.namespace;
  const value = (name: string, v: string) => ({ name, value: v });
  const fromSecret = (name: string, secretKey: string) => ({
    name,
    valueFrom: { secretKeyRef: { name: BACKUP_CREDENTIALS_SECRET, key: secretKey } },
  });
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
    {
      // Talos turns this into a Secret of the same name holding a talosconfig for these roles only.
      apiVersion: "talos.dev/v1alpha1",
      kind: "ServiceAccount",
      metadata: { name: TALOS_SECRET, namespace },
      spec: { roles: [ETCD_BACKUP_ROLE] },
    },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: BACKUP_CREDENTIALS_SECRET, namespace },
      type: "Opaque",
      stringData: { AWS_ACCESS_KEY_ID: key.accessId, AWS_SECRET_ACCESS_KEY: key.secret },
    },
    {
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: BACKUP_JOB, namespace },
      spec: {
        schedule: settings.schedule,
        timeZone: "Etc/UTC",
        concurrencyPolicy: "Forbid",
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 3,
        jobTemplate: {
          spec: {
            backoffLimit: 2,
            template: {
              spec: {
                restartPolicy: "OnFailure",
                containers: [
                  {
                    name: BACKUP_JOB,
                    image: settings.image,
                    command: ["/talos-backup"],
                    workingDir: "/tmp",
                    env: [
                      fromSecret("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
                      fromSecret("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"),
                      // Cloud Storage's XML API takes any region name with SigV4; "auto" as documented.
                      value("AWS_REGION", "auto"),
                      value("CUSTOM_S3_ENDPOINT", GCS_XML_ENDPOINT),
                      value("BUCKET", destination.bucket),
                      value("S3_PREFIX", destination.prefix.replace(/\/$/, "")),
                      value("CLUSTER_NAME", clusterName),
                      value("AGE_X25519_PUBLIC_KEY", settings.ageRecipient),
                      // The AWS SDK's default CRC32 checksums (service/s3 1.73+) are not what Cloud
                      // Storage's XML API takes; only what a request requires.
                      value("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required"),
                      value("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required"),
                    ],
                    securityContext: {
                      runAsUser: 1000,
                      runAsGroup: 1000,
                      runAsNonRoot: true,
                      allowPrivilegeEscalation: false,
                      capabilities: { drop: ["ALL"] },
                      seccompProfile: { type: "RuntimeDefault" },
                    },
                    volumeMounts: [
                      { name: "tmp", mountPath: "/tmp" },
                      { name: "talos-secrets", mountPath: "/var/run/secrets/talos.dev" },
                    ],
                  },
                ],
                volumes: [
                  { name: "tmp", emptyDir: {} },
                  { name: "talos-secrets", secret: { secretName: TALOS_SECRET } },
                ],
              },
            },
          },
        },
      },
    },
  ];
}

/**
 * The control-plane documents of the backups: the Talos API access always; the job itself when the
 * destination is a bucket and its key is known (a file:// stand-in has no job).
 */
export function etcdBackupPatches(
  settings: EtcdBackupsSpec,
  clusterName: string,
  key: WriterKey | undefined,
): ConfigDocument[] {
  const access = talosApiAccessPatch(settings);
  if (settings.destination.kind !== "gs" || key === undefined) return [access];
  return [
    access,
    {
      cluster: {
        inlineManifests: [
          {
            name: BACKUP_MANIFEST,
            contents: backupManifests(settings, clusterName, key)
              .map((o) => stringify(o))
              .join("---\n"),
          },
        ],
      },
    },
  ];
}
