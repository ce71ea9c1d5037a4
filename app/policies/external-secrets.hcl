# Read application secrets for the External Secrets Operator. ${kvMount} is the stack's
# openbao.kvMount (replaced when the policy is written).
path "${kvMount}/data/apps/*" {
  capabilities = ["read"]
}

path "${kvMount}/metadata/apps/*" {
  capabilities = ["read", "list"]
}
