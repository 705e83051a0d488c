// response_mode=form_post: send the authorization response to the app as soon as the page is
// read. Served from /assets/form-post.js, since the page's policy runs no inline script.
document.getElementById("form-post").submit();
