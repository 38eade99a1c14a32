{{/* Names, labels and the few values several templates derive from. */}}

{{- define "notification-receiver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-scoped name; the release name alone when it already contains the chart name. */}}
{{- define "notification-receiver.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "notification-receiver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "notification-receiver.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "notification-receiver.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "notification-receiver.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The server pods (Deployment); the migration Job's pods carry component "migrations". */}}
{{- define "notification-receiver.serverSelectorLabels" -}}
{{ include "notification-receiver.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "notification-receiver.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The app's default ports, fixed: the chart sets PORT and ADMIN_PORT to them explicitly. */}}
{{- define "notification-receiver.publicPort" -}}8080{{- end }}
{{- define "notification-receiver.adminPort" -}}9090{{- end }}

{{/* SHUTDOWN_TIMEOUT + the optional preStop sleep + 10 s for the process to exit. */}}
{{- define "notification-receiver.terminationGracePeriodSeconds" -}}
{{- add .Values.config.shutdownTimeoutSeconds .Values.preStopSleepSeconds 10 }}
{{- end }}

{{/* "true" when the chart makes the Secret itself (some secret value was given). */}}
{{- define "notification-receiver.chartMadeSecret" -}}
{{- $s := .Values.secrets }}
{{- if or $s.databaseUrl $s.amqpUrl $s.journalAmqpUrl $s.secondKeys $s.notifyBasicAuth $s.adminToken $s.eventTeamTokens $s.paymentApiCredentials $s.consoleOperatorTokens $s.consoleViewerTokens }}true{{ end }}
{{- end }}

{{/*
"true" when the pods keep the journal of recorded notifications: config.journalRetention is not off and it has a
broker (JOURNAL_AMQP_URL or AMQP_URL; a Secret you manage is taken to hold one).
*/}}
{{- define "notification-receiver.journalOn" -}}
{{- $s := .Values.secrets }}
{{- if ne (include "notification-receiver.retention" .Values.config.journalRetention) "off" }}
{{- if or (not (include "notification-receiver.chartMadeSecret" .)) $s.amqpUrl $s.journalAmqpUrl }}true{{ end }}
{{- end }}
{{- end }}

{{/* Name of the Secret the pods read. */}}
{{- define "notification-receiver.secretName" -}}
{{- default (include "notification-receiver.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/*
A retention value (config.historyRetention, config.bodyRetention) as the app reads it: a duration, or off.
YAML reads an unquoted off as false, so false means off too.
*/}}
{{- define "notification-receiver.retention" -}}
{{- if or (eq (toString .) "false") (eq (toString .) "off") }}off{{ else }}{{ . }}{{ end }}
{{- end }}

{{/*
A duration as the app reads it (`500ms`, `30s`, `15m`, `12h`, `180d`; a bare number is seconds) in milliseconds;
nothing for a retention that is off. The validation compares durations with the app's bounds in it.
*/}}
{{- define "notification-receiver.durationMs" -}}
{{- $value := include "notification-receiver.retention" . }}
{{- if ne $value "off" }}
{{- $number := regexFind "^[0-9]+" $value }}
{{- $unit := default "s" (trimPrefix $number $value) }}
{{- mul (int64 $number) (get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000) $unit) }}
{{- end }}
{{- end }}

{{/* The same in whole seconds (rounded down): the alerts' thresholds follow the configured retentions with it. */}}
{{- define "notification-receiver.durationSeconds" -}}
{{- with include "notification-receiver.durationMs" . }}{{ div (int64 .) 1000 }}{{ end }}
{{- end }}

{{/* A size as the app reads it (`64kb`, `1.5gb`: units of 1024, the fraction rounded down) in bytes. */}}
{{- define "notification-receiver.sizeBytes" -}}
{{- $value := lower (toString .) }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $value }}
{{- $unit := trim (trimPrefix $number $value) }}
{{- $multiple := get (dict "b" 1 "kb" 1024 "mb" 1048576 "gb" 1073741824 "tb" 1099511627776) $unit }}
{{- int64 (floor (mulf (float64 $number) $multiple)) }}
{{- end }}

{{/* Fails the render on contradictory or missing values the schema cannot express. */}}
{{- define "notification-receiver.validate" -}}
{{- $s := .Values.secrets }}
{{- if include "notification-receiver.chartMadeSecret" . }}
{{- if $s.existingSecret }}
{{- fail "secrets.existingSecret cannot be combined with secrets.databaseUrl/amqpUrl/journalAmqpUrl/secondKeys/notifyBasicAuth/adminToken/eventTeamTokens/paymentApiCredentials/consoleOperatorTokens/consoleViewerTokens: use one or the other" }}
{{- end }}
{{- if not $s.databaseUrl }}{{ fail "secrets.databaseUrl is required when the chart makes the Secret" }}{{ end }}
{{- if not $s.secondKeys }}{{ fail "secrets.secondKeys is required when the chart makes the Secret" }}{{ end }}
{{- if and .Values.config.relayEnabled (not $s.amqpUrl) }}{{ fail "secrets.amqpUrl is required when the chart makes the Secret and config.relayEnabled is true" }}{{ end }}
{{- if and .Values.config.paymentApiUrl (not $s.paymentApiCredentials) }}{{ fail "secrets.paymentApiCredentials is required when the chart makes the Secret and config.paymentApiUrl is set" }}{{ end }}
{{- if and .Values.consoleIngress.enabled (not (or $s.consoleOperatorTokens $s.consoleViewerTokens $s.adminToken)) }}{{ fail "consoleIngress.enabled needs secrets.consoleOperatorTokens or consoleViewerTokens (or adminToken): without a token the console is closed" }}{{ end }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) }}
{{- fail "ingress.host is required when ingress.enabled is true" }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.config.trustProxy) (not .Values.ingress.controllerCidrs) }}
{{- fail "ingress.controllerCidrs is required when ingress.enabled is true: the app believes X-Forwarded-For only from the ingress controller's addresses (or set config.trustProxy)" }}
{{- end }}
{{- if .Values.consoleIngress.enabled }}
{{- if not .Values.consoleIngress.host }}
{{- fail "consoleIngress.host is required when consoleIngress.enabled is true" }}
{{- end }}
{{- if and .Values.ingress.enabled (eq (lower .Values.consoleIngress.host) (lower .Values.ingress.host)) }}
{{- fail "consoleIngress.host must differ from ingress.host: the payment service's address never serves the console" }}
{{- end }}
{{- end }}
{{- if regexMatch "^[0-9]+$" (toString .Values.config.trustProxy) }}
{{- fail "config.trustProxy must be none or proxy addresses/CIDRs, not a hop count: any pod that reaches the public port directly could choose its source address" }}
{{- end }}
{{- $history := include "notification-receiver.durationSeconds" .Values.config.historyRetention }}
{{- if and $history (lt (int64 $history) 259200) }}
{{- fail "config.historyRetention must be at least 72h (the sender retries for 72 hours), or off" }}
{{- end }}
{{- $bodies := include "notification-receiver.durationSeconds" .Values.config.bodyRetention }}
{{- if and $bodies (lt (int64 $bodies) 86400) }}
{{- fail "config.bodyRetention must be at least 1d, or off" }}
{{- end }}
{{- $audit := include "notification-receiver.durationSeconds" .Values.config.auditRetention }}
{{- if and $audit (lt (int64 $audit) 86400) }}
{{- fail "config.auditRetention must be at least 1d, or off" }}
{{- end }}
{{- $journal := include "notification-receiver.durationMs" .Values.config.journalRetention }}
{{- if and $journal (or (lt (int64 $journal) 300000) (gt (int64 $journal) 86400000)) }}
{{- fail "config.journalRetention must be from 5m to 24h, or off" }}
{{- end }}
{{- $journalBytes := int64 (include "notification-receiver.sizeBytes" .Values.config.journalMaxBytes) }}
{{- if or (lt $journalBytes 16777216) (gt $journalBytes 68719476736) }}
{{- fail "config.journalMaxBytes must be a size from 16mb to 64gb, such as 1gb" }}
{{- end }}
{{- if gt (int64 (include "notification-receiver.durationMs" .Values.config.failoverReconcileWindow)) 86400000 }}
{{- fail "config.failoverReconcileWindow must be at most 24h (0: none)" }}
{{- end }}
{{- if lt (int .Values.autoscaling.maxReplicas) (int .Values.autoscaling.minReplicas) }}
{{- fail "autoscaling.maxReplicas must be >= autoscaling.minReplicas" }}
{{- end }}
{{- end }}

{{/*
env entries read from the Secret; AMQP_URL is required by the relay only, JOURNAL_AMQP_URL (AMQP_URL's when absent)
and NOTIFY_BASIC_AUTH are optional.
*/}}
{{- define "notification-receiver.secretEnv" -}}
{{- $name := include "notification-receiver.secretName" . -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: DATABASE_URL
- name: SECOND_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: SECOND_KEYS
- name: AMQP_URL
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: AMQP_URL
      optional: {{ not .Values.config.relayEnabled }}
- name: JOURNAL_AMQP_URL
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: JOURNAL_AMQP_URL
      optional: true
- name: NOTIFY_BASIC_AUTH
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: NOTIFY_BASIC_AUTH
      optional: true
- name: ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: ADMIN_TOKEN
      optional: true
- name: EVENT_TEAM_TOKENS
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: EVENT_TEAM_TOKENS
      optional: true
- name: PAYMENT_API_CREDENTIALS
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: PAYMENT_API_CREDENTIALS
      optional: {{ not .Values.config.paymentApiUrl }}
{{- range list "CONSOLE_OPERATOR_TOKENS" "CONSOLE_VIEWER_TOKENS" }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: {{ . }}
      optional: true
{{- end }}
{{- end }}

{{/* NetworkPolicy egress rules to DNS and Postgres (server pods and migration pods). */}}
{{- define "notification-receiver.dnsAndPostgresEgress" -}}
{{- $np := .Values.networkPolicy -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  {{- with $np.egress.dns.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
- ports:
    - port: {{ $np.egress.postgres.port }}
      protocol: TCP
  {{- with $np.egress.postgres.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* Pod-level security context shared by the server pods and the migration Job. */}}
{{- define "notification-receiver.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.podSecurityContext.runAsUser }}
runAsGroup: {{ .Values.podSecurityContext.runAsGroup }}
fsGroup: {{ .Values.podSecurityContext.fsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "notification-receiver.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.podSecurityContext.runAsUser }}
runAsGroup: {{ .Values.podSecurityContext.runAsGroup }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Label matchers that pick this release's series (ServiceMonitor: job = Service name). */}}
{{- define "notification-receiver.metricSelector" -}}
namespace="{{ .Release.Namespace }}",job="{{ include "notification-receiver.fullname" . }}"
{{- end }}

{{/* "true" when a monitoring.coreos.com kind is wanted: forced by value, or "auto" and served. */}}
{{- define "notification-receiver.wantMonitoringKind" -}}
{{- $mode := toString .mode }}
{{- if or (eq $mode "true") (and (eq $mode "auto") (.root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind))) }}true{{ end }}
{{- end }}

{{/*
The server's command line: node, its V8 flags, the entry point. The image's CMD is the same without the
heap flags.
*/}}
{{- define "notification-receiver.serverCommand" -}}
- node
- --no-allocation-site-pretenuring
{{- if gt (int .Values.heapLimitMb) 0 }}
- {{ printf "--max-old-space-size=%d" (int .Values.heapLimitMb) }}
{{- end }}
{{- if gt (int .Values.heapSemiSpaceMb) 0 }}
- {{ printf "--max-semi-space-size=%d" (int .Values.heapSemiSpaceMb) }}
{{- end }}
- dist/main.js
{{- end -}}

{{/*
TRUST_PROXY: config.trustProxy, else the ingress controller's addresses when an ingress is on (the public one, or
the console's with ingress.controllerCidrs given: its sign-in throttle then counts each person's address), else none.
*/}}
{{- define "notification-receiver.trustProxy" -}}
{{- if .Values.config.trustProxy -}}
{{ .Values.config.trustProxy }}
{{- else if or .Values.ingress.enabled (and .Values.consoleIngress.enabled .Values.ingress.controllerCidrs) -}}
{{ join "," .Values.ingress.controllerCidrs }}
{{- else -}}
none
{{- end -}}
{{- end -}}

{{/*
ADMIN_ORIGINS: the origins the admin port's console and JSON API answer besides loopback (any other Host: 421). The
Service's names in the cluster (for clients of the JSON API), the console Ingress's host, and config.adminOrigins.
*/}}
{{- define "notification-receiver.adminOrigins" -}}
{{- $name := include "notification-receiver.fullname" . -}}
{{- $port := include "notification-receiver.adminPort" . -}}
{{- $origins := list -}}
{{- range list $name (printf "%s.%s" $name .Release.Namespace) (printf "%s.%s.svc" $name .Release.Namespace) (printf "%s.%s.svc.cluster.local" $name .Release.Namespace) -}}
{{- $origins = append $origins (printf "http://%s:%s" . $port) -}}
{{- end -}}
{{- if .Values.consoleIngress.enabled -}}
{{- $origins = append $origins (printf "https://%s" (lower .Values.consoleIngress.host)) -}}
{{- end -}}
{{- join "," (concat $origins .Values.config.adminOrigins) -}}
{{- end -}}

{{/*
config.allowedSourceIps as CIDRs for the ingress controller's whitelist-source-range, with the presets
expanded to the payment service's published addresses (spec, "Events", delivery rule 7; the same lists
as src/intake/sourceAddress.ts, which a chart test compares).
*/}}
{{- define "notification-receiver.allowlistCidrs" -}}
{{- $presets := dict
  "production" (list "185.68.12.10" "185.68.12.11" "185.68.12.12" "185.68.12.26" "185.68.12.27" "185.68.12.28")
  "sandbox" (list "185.68.14.10" "185.68.14.11" "185.68.14.12" "185.68.14.26" "185.68.14.27" "185.68.14.28") -}}
{{- $cidrs := list -}}
{{- range splitList "," .Values.config.allowedSourceIps -}}
{{- $entry := trim . -}}
{{- if eq (lower $entry) "any" -}}
{{- fail "ingress.enforceAllowlist cannot enforce config.allowedSourceIps 'any'" -}}
{{- else if hasKey $presets (lower $entry) -}}
{{- range get $presets (lower $entry) }}{{ $cidrs = append $cidrs (printf "%s/32" .) }}{{ end -}}
{{- else if $entry -}}
{{- $cidrs = append $cidrs $entry -}}
{{- end -}}
{{- end -}}
{{- join "," $cidrs -}}
{{- end -}}
