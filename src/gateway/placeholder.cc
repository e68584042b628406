// placeholder, replaced as the area grows
