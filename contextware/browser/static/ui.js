// Contextware memory browser: small progressive touches only; every page works without script.
document.addEventListener("DOMContentLoaded", () => {
  // A dashboard served from the resident service while this process loads: reload once it can count.
  if (document.getElementById("partial")) {
    setTimeout(() => location.reload(), 1500);
  }
  // Filters submit as soon as a choice changes.
  for (const select of document.querySelectorAll("form.filters select")) {
    select.addEventListener("change", () => select.form.submit());
  }
});
