{% load static %}/* Agentboard's service worker: shows Web Push notifications and opens what they point to.
   It caches nothing, so every page and file always comes fresh from the server. */
"use strict";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("push", function (event) {
  var message = {};
  try { message = event.data ? event.data.json() : {}; } catch (e) { message = {}; }
  var title = message.title || "Agentboard";
  event.waitUntil(self.registration.showNotification(title, {
    body: message.body || "Something waits for you.",
    tag: message.tag || undefined,
    icon: "{% static 'icons/icon-192.png' %}",
    data: { url: message.url || "/inbox/" },
  }));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var url = (event.notification.data && event.notification.data.url) || "/inbox/";
  event.waitUntil(self.clients.matchAll({ type: "window" }).then(function (windows) {
    var open = windows.find(function (client) { return "navigate" in client; });
    if (!open) return self.clients.openWindow(url);
    return open.focus().then(function (client) { return client.navigate(url); })
      .catch(function () { return self.clients.openWindow(url); });
  }));
});
