// The token form, shown when the admin listener answered 401: resolves with
// what the operator typed.
export function askForToken() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  form.hidden = false;
  input.focus();
  return new Promise((resolve) => {
    form.addEventListener(
      'submit',
      (event) => {
        event.preventDefault();
        form.hidden = true;
        resolve(input.value.trim());
        input.value = '';
      },
      { once: true },
    );
  });
}
