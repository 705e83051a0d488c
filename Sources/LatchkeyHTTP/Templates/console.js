document.querySelectorAll('button[data-copy]').forEach(function (button) {
  button.addEventListener('click', function () {
    var field = document.getElementById(button.getAttribute('data-copy'));
    field.select();
    (navigator.clipboard ? navigator.clipboard.writeText(field.value) : Promise.reject())
      .then(function () { button.textContent = 'Copied'; }, function () { document.execCommand('copy'); button.textContent = 'Copied'; });
  });
});
