{{- define "tambo.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tambo.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tambo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tambo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tambo.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "tambo.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "tambo.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "tambo.secret" -}}
{{- required "existingSecret: name the Secret holding SECRET_KEY and DATABASE_URL (secrets are never values)" .Values.existingSecret -}}
{{- end -}}

{{/* The Secret's keys as environment variables. `direct` (the migrations Job) reads DATABASE_URL from
the direct key when PgBouncer stands in front. */}}
{{- define "tambo.secretEnv" -}}
{{- $secret := include "tambo.secret" .root -}}
{{- $direct := .root.Values.directDatabaseUrlKey -}}
{{- range .root.Values.secretKeys.required }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ if and $.direct $direct (eq . "DATABASE_URL") }}{{ $direct }}{{ else }}{{ . }}{{ end }}
{{- end }}
{{- range .root.Values.secretKeys.optional }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ . }}
      optional: true
{{- end }}
{{- if and $direct (not .direct) }}
- name: DATABASE_LISTEN_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $direct }}
{{- end }}
{{- end -}}

{{/* The plain settings, the same names as docker-compose.yml's. */}}
{{- define "tambo.configEnv" -}}
{{- $c := .Values.config -}}
- name: ALLOWED_HOSTS
  value: {{ $c.allowedHosts | quote }}
- name: CSRF_TRUSTED_ORIGINS
  value: {{ $c.csrfTrustedOrigins | quote }}
- name: FORWARDED_ALLOW_IPS
  value: {{ $c.forwardedAllowIps | quote }}
- name: OPENAI_BASE_URL
  value: {{ $c.openaiBaseUrl | quote }}
- name: OPENAI_MODEL
  value: {{ $c.openaiModel | quote }}
- name: WORKERS
  value: {{ $c.workers | quote }}
- name: DB_POOL_SIZE
  value: {{ $c.dbPoolSize | quote }}
- name: SECURE_COOKIES
  value: {{ $c.secureCookies | quote }}
- name: LOG_FORMAT
  value: {{ $c.logFormat | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The Host header of the kubelet's probes: one the server's ALLOWED_HOSTS accepts. */}}
{{- define "tambo.probeHost" -}}
{{- $first := first (splitList "," .Values.config.allowedHosts) | trim -}}
{{- if ne $first "*" -}}{{ trimPrefix "." $first }}{{- end -}}
{{- end -}}

{{- define "tambo.terminationGracePeriodSeconds" -}}
{{- add .Values.preStopSleepSeconds .Values.gracefulShutdownSeconds .Values.shutdownMarginSeconds -}}
{{- end -}}
