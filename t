tok-abc
