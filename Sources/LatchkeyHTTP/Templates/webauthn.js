"use strict";
// Passkeys (WebAuthn) for Latchkey's pages. A submit button with data-passkey="registration",
// "sign_in", "confirmation" or "reauthentication" asks the server for options (POST
// /webauthn/options, with the form's CSRF token), lets the browser run the ceremony, puts the
// answer in the form named by data-form and submits it: the server checks everything. Byte
// strings travel as base64url.
(() => {
  const decode = (text) => {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    const binary = atob(base64 + "===".slice((base64.length + 3) % 4));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  };
  const encode = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const put = (form, name, value) => {
    let input = form.querySelector(`input[type=hidden][name="${name}"]`);
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.appendChild(input);
    }
    input.value = value;
  };
  const say = (button, text) => {
    const box = document.getElementById(button.dataset.error);
    if (box) {
      box.textContent = text;
      box.hidden = false;
    }
  };

  // A sign-in offered in the username field's autofill (conditional mediation), pending until the
  // person picks a passkey there or presses a button, which cancels it first.
  let pending = null;

  async function run(button, conditional = false) {
    const form = document.getElementById(button.dataset.form);
    if (!form || (!conditional && !form.reportValidity())) return;
    if (pending) pending.abort();
    const controller = conditional ? new AbortController() : null;
    pending = controller;
    const purpose = button.dataset.passkey;
    const response = await fetch("/webauthn/options", {
      method: "POST", credentials: "same-origin",
      body: new URLSearchParams({ csrf_token: form.elements.csrf_token.value, purpose }),
    });
    if (!response.ok) throw new Error("This page has expired. Reload it and try again.");
    const { publicKey } = await response.json();
    // An autofill request that a button has replaced meanwhile must not touch the form.
    if (controller && controller.signal.aborted) return;
    const challenge = publicKey.challenge;
    publicKey.challenge = decode(challenge);
    const ids = (list) => (list || []).map((item) => ({ ...item, id: decode(item.id) }));
    put(form, "challenge", challenge);
    if (purpose === "registration") {
      publicKey.user.id = decode(publicKey.user.id);
      publicKey.excludeCredentials = ids(publicKey.excludeCredentials);
      const credential = await navigator.credentials.create({ publicKey });
      put(form, "client_data", encode(credential.response.clientDataJSON));
      put(form, "attestation_object", encode(credential.response.attestationObject));
    } else {
      publicKey.allowCredentials = ids(publicKey.allowCredentials);
      const request = controller ? { publicKey, mediation: "conditional", signal: controller.signal } : { publicKey };
      const credential = await navigator.credentials.get(request);
      put(form, "credential_id", encode(credential.rawId));
      put(form, "client_data", encode(credential.response.clientDataJSON));
      put(form, "authenticator_data", encode(credential.response.authenticatorData));
      put(form, "signature", encode(credential.response.signature));
      if (credential.response.userHandle) put(form, "user_handle", encode(credential.response.userHandle));
    }
    form.submit();
  }

  const buttons = document.querySelectorAll("button[data-passkey]");
  if (!window.PublicKeyCredential) {
    for (const button of buttons) button.hidden = true;
    return;
  }
  for (const button of buttons) {
    const start = (event) => {
      event.preventDefault();
      run(button).catch((error) => {
        say(button, error.name === "NotAllowedError"
          ? "No passkey was used. Try again, or sign in another way."
          : error.message || "The passkey could not be used.");
      });
    };
    // The button submits its form (so Enter in the form's fields does too); the script takes the
    // submission over, and its own form.submit() fires no submit event.
    const form = document.getElementById(button.dataset.form);
    if (form) form.addEventListener("submit", start);
    if (button.dataset.conditional && PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then((available) => {
        // Errors here (cancelled, aborted by a button) are not the person's to read.
        if (available) run(button, true).catch(() => {});
      });
    }
  }
})();
