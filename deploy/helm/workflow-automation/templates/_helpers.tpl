{{/* Names and labels shared by every template. */}}

{{- define "wfa.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "wfa.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wfa.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "wfa.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: call with (dict "ctx" $ "component" "api"). */}}
{{- define "wfa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wfa.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "wfa.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "wfa.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "wfa.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the credentials: the user's existingSecret or the chart's own. */}}
{{- define "wfa.secretName" -}}
{{- default (include "wfa.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/*
The secrets keyring: the one place that names its variable and reads its value, for the
release's Secret, the migration hook's Secret and the migration Job. The Secret always holds
the keyring (`id:key,id:key`, the first key seals); the one-key form
secrets.SECRETS_ENCRYPTION_KEY=<key> becomes `default:<key>`, as the service itself reads it,
so values it sealed keep opening.
*/}}
{{- define "wfa.sealingKeyVar" -}}
SECRETS_ENCRYPTION_KEYS
{{- end -}}
{{- define "wfa.sealingKeyValue" -}}
{{- $s := .Values.secrets -}}
{{- if and $s.SECRETS_ENCRYPTION_KEYS $s.SECRETS_ENCRYPTION_KEY -}}
{{- fail "secrets.SECRETS_ENCRYPTION_KEYS and secrets.SECRETS_ENCRYPTION_KEY are both set: set one (SECRETS_ENCRYPTION_KEY=<key> is SECRETS_ENCRYPTION_KEYS=default:<key>)" -}}
{{- else if $s.SECRETS_ENCRYPTION_KEY -}}
default:{{ $s.SECRETS_ENCRYPTION_KEY }}
{{- else -}}
{{- $keys := required "secrets.SECRETS_ENCRYPTION_KEYS is required (or set existingSecret): id:key[,id:key…], the first key seals; 32-byte keys in base64 or hex, e.g. k1:$(openssl rand -base64 32)" $s.SECRETS_ENCRYPTION_KEYS -}}
{{- /* Checked here, not by the schema, whose error would print the key. */ -}}
{{- if not (regexMatch "^\\s*[A-Za-z0-9_-]{1,32}:" $keys) -}}
{{- fail "secrets.SECRETS_ENCRYPTION_KEYS: expected id:key[,id:key…] (a single key alone goes in secrets.SECRETS_ENCRYPTION_KEY, or write it as default:<key>)" -}}
{{- end -}}
{{- $keys -}}
{{- end -}}
{{- end -}}

{{/*
The variables of src/config.ts that are settings, not credentials. Refuses what a release
cannot run without, so that a broken release fails at `helm install`, not in a crash loop.
*/}}
{{- define "wfa.configData" -}}
{{- $v := .Values -}}
{{- $c := dict
  "NODE_ENV" "production"
  "PORT" (toString $v.api.port)
  "LOG_LEVEL" (toString $v.logLevel)
  "TEMPORAL_ADDRESS" (required "temporal.address is required: the frontend of an existing Temporal cluster (host:7233)" $v.temporal.address)
  "TEMPORAL_NAMESPACE" (toString $v.temporal.namespace)
  "TEMPORAL_TASK_QUEUE" (toString $v.temporal.taskQueue)
  "DATABASE_POOL_MAX" (toString $v.postgresql.poolMax)
  "DATABASE_ACQUIRE_TIMEOUT_MS" (toString $v.postgresql.acquireTimeoutMs)
  "REDIS_KEY_PREFIX" (toString $v.redis.keyPrefix)
  "FILE_STORAGE" "s3"
  "S3_BUCKET" (required "s3.bucket is required: the API and the worker run in different pods and share report and export files through S3 only" $v.s3.bucket)
  "S3_REGION" (toString $v.s3.region)
  "S3_FORCE_PATH_STYLE" (toString $v.s3.forcePathStyle)
  "S3_PRESIGNED_DOWNLOAD_TTL_SECONDS" (toString $v.s3.presignedDownloadTtlSeconds)
-}}
{{- with $v.publicBaseUrl }}{{ $_ := set $c "PUBLIC_BASE_URL" . }}{{ end -}}
{{- with $v.temporal.uiUrl }}{{ $_ := set $c "TEMPORAL_UI_URL" . }}{{ end -}}
{{- with $v.s3.endpoint }}{{ $_ := set $c "S3_ENDPOINT" . }}{{ end -}}
{{- with $v.trustProxy }}{{ $_ := set $c "TRUST_PROXY" (toString .) }}{{ end -}}
{{- $reserved := list "MIGRATE_ON_START" "METRICS_PORT" "TEMPORAL_WORKFLOW_BUNDLE_PATH" "DATABASE_URL" "REDIS_URL" "SECRETS_ENCRYPTION_KEYS" "SECRETS_ENCRYPTION_KEY" "SECRETS_ENCRYPTION_KEYS_FILE" "S3_ACCESS_KEY_ID" "S3_SECRET_ACCESS_KEY" "AI_MODEL_API_KEY" -}}
{{- range $name, $value := $v.config -}}
{{- if or (hasKey $c $name) (has $name $reserved) -}}
{{- fail (printf "config.%s: set by the chart from its own values or secrets (see values.yaml)" $name) -}}
{{- end -}}
{{- $_ := set $c $name (toString $value) -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* Pod-level settings both Deployments share: call with (dict "ctx" $ "component" .Values.api). */}}
{{- define "wfa.podScheduling" -}}
{{- with .component.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Environment both roles share: settings, credentials, and no migration at start. */}}
{{- define "wfa.envFrom" -}}
envFrom:
  - configMapRef:
      name: {{ include "wfa.fullname" . }}
  - secretRef:
      name: {{ include "wfa.secretName" . }}
{{- end -}}

{{/* Restarts the pods when the settings or the chart's credentials change. */}}
{{- define "wfa.checksums" -}}
checksum/config: {{ include "wfa.configData" . | sha256sum }}
{{- if not .Values.existingSecret }}
checksum/secret: {{ toJson .Values.secrets | sha256sum }}
{{- end }}
{{- end -}}
