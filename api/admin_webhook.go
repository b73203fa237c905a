package api

import (
	"net/url"
	"unicode/utf8"

	"github.com/pushd/pushd/push"
)

// WebhookRequest sets an app's delivery-event webhook (package webhook): url "" removes it.
// The secret is write-only: required with a new webhook, kept when left out of a change.
type WebhookRequest struct {
	URL    *string `json:"url"`
	Secret *string `json:"secret"`
}

// WebhookView is an app's webhook as the admin API shows it: never the secret.
type WebhookView struct {
	URL       string `json:"url"`
	SecretSet bool   `json:"secretSet"`
}

// Bounds of a webhook's settings.
const (
	maxWebhookURL    = 2048
	minWebhookSecret = 16
	maxWebhookSecret = 256
)

func viewOfWebhook(h push.AppWebhook) *WebhookView {
	if h.URL == "" {
		return nil
	}
	return &WebhookView{URL: h.URL, SecretSet: h.Secret != ""}
}

// applyWebhook applies a webhook change and validates the result.
func applyWebhook(cur push.AppWebhook, req *WebhookRequest) (push.AppWebhook, *push.Error) {
	if req == nil {
		return cur, nil
	}
	out := cur
	if req.URL != nil {
		out.URL = *req.URL
	}
	if req.Secret != nil {
		out.Secret = *req.Secret
	}
	if out.URL == "" {
		if req.Secret != nil && *req.Secret != "" {
			return cur, push.Errorf(push.CodeValidation, "webhook.secret needs a webhook.url")
		}
		return push.AppWebhook{}, nil
	}
	u, err := url.Parse(out.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || len(out.URL) > maxWebhookURL {
		return cur, push.Errorf(push.CodeValidation, "webhook.url must be an absolute http or https URL without user info, at most %d bytes", maxWebhookURL)
	}
	if n := utf8.RuneCountInString(out.Secret); n < minWebhookSecret || n > maxWebhookSecret {
		return cur, push.Errorf(push.CodeValidation, "webhook.secret must be %d to %d characters", minWebhookSecret, maxWebhookSecret)
	}
	return out, nil
}
