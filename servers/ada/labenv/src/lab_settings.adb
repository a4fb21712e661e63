with Ada.Environment_Variables;

with GNAT.Sockets;

package body Lab_Settings is

   function Env (Name : String) return String is
     (if Ada.Environment_Variables.Exists (Name)
      then Ada.Environment_Variables.Value (Name) else "");

   function Env_Positive
     (Name : String; Default, Last : Positive) return Positive
   is
      Text : constant String := Env (Name);
   begin
      if Text = "" then
         return Default;
      end if;
      declare
         N : constant Positive := Positive'Value (Text);
      begin
         if N <= Last then
            return N;
         end if;
      end;
      raise Constraint_Error;
   exception
      when Constraint_Error =>
         raise Invalid_Setting with Name & "=""" & Text
           & """: expected a whole number from 1 to" & Positive'Image (Last);
   end Env_Positive;

   function Env_Address (Name, Default : String) return String is
      Text : constant String := Env (Name);
   begin
      return (if Text = "" then Default
              else GNAT.Sockets.Image (GNAT.Sockets.Inet_Addr (Text)));
   exception
      when GNAT.Sockets.Socket_Error | Constraint_Error =>
         raise Invalid_Setting with Name & "=""" & Text
           & """: expected an IP address such as 127.0.0.1 or ::1";
   end Env_Address;

   function Image (N : Positive) return String is
     (Positive'Image (N) (2 .. Positive'Image (N)'Last));

   function Bind return String is (Env_Address ("BIND", "127.0.0.1"));

   function Port return Positive is (Env_Positive ("PORT", 8080, 65_535));

   function Backlog return Positive is
     (Env_Positive ("BACKLOG", 512, 65_535));

   function Workers (Default : Positive) return Positive is
     (Env_Positive ("WORKERS", Default, 10_000));

   function Workers_Given return Boolean is (Env ("WORKERS") /= "");

   function Endpoint (Address : String; Port : Positive) return String is
     ((if GNAT.Sockets.Is_IPv6_Address (Address)
       then "[" & Address & "]" else Address)
      & ":" & Image (Port));

end Lab_Settings;
