// Contextware memory browser: small progressive touches only; every page works without script.
document.addEventListener("DOMContentLoaded", () => {
  // Filters submit as soon as a choice changes.
  for (const select of document.querySelectorAll("form.filters select")) {
    select.addEventListener("change", () => select.form.submit());
  }
});
